package plugin

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/kinds"
)

// Scheme holds the built-in types and every kind of the operator.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := kinds.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Target is the resource a command acts on.
type Target struct {
	Kind kinds.Kind
	Obj  client.Object
}

// Resolve reads the resource that args name, as kubectl names one:
// "KIND NAME" or "KIND/NAME", KIND being the kind, its plural or its short
// name (mapper resolves them, as kubectl does, from the API server's
// discovery), in namespace.
func Resolve(ctx context.Context, c client.Reader, mapper meta.RESTMapper, namespace string, args []string) (*Target, error) {
	var kind, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2:
		kind, name = args[0], args[1]
	default:
		return nil, fmt.Errorf("name one resource: KIND NAME or KIND/NAME (for example: rec my-cluster, etcd/example)")
	}
	resource := schema.ParseGroupResource(strings.ToLower(kind))
	gvk, err := mapper.KindFor(resource.WithVersion(""))
	if err != nil {
		return nil, fmt.Errorf("%s is no kind this cluster serves: %w", kind, err)
	}
	for _, k := range kinds.All() {
		if k.GVK.GroupKind() == gvk.GroupKind() {
			obj := k.New()
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
				return nil, err
			}
			return &Target{Kind: k, Obj: obj}, nil
		}
	}
	return nil, fmt.Errorf("%s is not a kind of app-operator: the kinds are %s", gvk.Kind, kindNames())
}

// kindNames lists the operator's kinds.
func kindNames() string {
	all := kinds.All()
	names := make([]string, 0, len(all))
	for _, k := range all {
		names = append(names, k.GVK.Kind)
	}
	return strings.Join(names, ", ")
}
