// Package controller wires every app-operator kind to the engine: the
// declarative kinds' adapters are here, the data services' in the
// packages etcd and redis.
package controller

import (
	"fmt"
	"reflect"

	"github.com/app-operator/app-operator/internal/controller/etcd"
	"github.com/app-operator/app-operator/internal/controller/redis"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/kinds"
)

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NewScheme returns a scheme with the built-in kinds and every app-operator API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kinds.AddToScheme(s))
	return s
}

// controllers are the controllers of the kinds, by kinds.Kind.Name.
var controllers = map[string]func(Options) engine.Registered{
	"appservice":             func(o Options) engine.Registered { return appServiceKind(o) },
	"webservice":             func(o Options) engine.Registered { return webServiceKind(o) },
	"microservicedeploy":     func(o Options) engine.Registered { return microServiceDeployKind(o) },
	"memcached":              func(o Options) engine.Registered { return memcachedKind(o) },
	"myweb":                  func(o Options) engine.Registered { return myWebKind(o) },
	"redisenterprisecluster": func(o Options) engine.Registered { return redis.ClusterKind(o.redis()) },
	"etcdcluster":            func(o Options) engine.Registered { return etcd.ClusterKind(o.etcd()) },
	"etcdbackup":             func(o Options) engine.Registered { return etcd.BackupKind(o.etcd()) },
	"etcdrestore":            func(o Options) engine.Registered { return etcd.RestoreKind(o.etcd()) },
}

// registeredKinds returns the controller of every kind of kinds.All, in
// that order; an error names a kind without one, or a controller of no
// kind.
func registeredKinds(opts Options) ([]engine.Registered, error) {
	var out []engine.Registered
	for _, k := range kinds.All() {
		newKind, ok := controllers[k.Name()]
		if !ok {
			return nil, fmt.Errorf("kind %s has no controller", k.GVK.Kind)
		}
		r := newKind(opts)
		if name, gvk := r.KindOf(); name != k.Name() || gvk != k.GVK {
			return nil, fmt.Errorf("the controller of kind %s serves %s as %q", k.GVK, gvk, name)
		}
		out = append(out, r)
	}
	if len(out) != len(controllers) {
		return nil, fmt.Errorf("%d controllers for %d kinds: a controller serves no kind of kinds.All", len(controllers), len(out))
	}
	return out, nil
}

// SetupWithManager registers every controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := opts.MicroServiceDeploy.Validate(); err != nil {
		return fmt.Errorf("MicroServiceDeploy options: %w", err)
	}
	opts = opts.withDefaults()
	env := engine.NewEnv(mgr.GetScheme(), opts.engine())
	index := engine.NewChildIndex(mgr.GetFieldIndexer())
	// Each kind's controllers start with its first resource (heldKind);
	// the quota controller with the first MicroServiceDeploy.
	var held []*engine.HeldKind
	ks, err := registeredKinds(opts)
	if err != nil {
		return err
	}
	for _, k := range ks {
		h := engine.NewHeldKind(mgr, k.Resource(), k.PrunedTypes(), index)
		if err := k.Setup(h, env); err != nil {
			return err
		}
		held = append(held, h)
	}
	quota := engine.NewHeldKind(mgr, &customv1.MicroServiceDeploy{}, nil, index)
	if err := setupNamespaceQuota(quota, env); err != nil {
		return err
	}
	for _, h := range append(held, quota) {
		if err := mgr.Add(manager.RunnableFunc(h.Run)); err != nil {
			return err
		}
	}
	return nil
}

// OwnedTypes returns every type of child the controllers own, once each.
func OwnedTypes() ([]client.Object, error) {
	ks, err := registeredKinds(Options{})
	if err != nil {
		return nil, err
	}
	var out []client.Object
	seen := map[reflect.Type]bool{}
	for _, k := range ks {
		for _, o := range k.OwnedTypes() {
			if t := reflect.TypeOf(o); !seen[t] {
				seen[t] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// Build returns the children the operator would apply for obj, in order,
// without a cluster: the builders are pure.
func Build(obj runtime.Object, opts Options) ([]runtime.ApplyConfiguration, error) {
	ks, err := registeredKinds(opts)
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		if acs, ok, err := k.BuildAny(obj); ok {
			return acs, err
		}
	}
	return nil, fmt.Errorf("%T is not a kind app-operator serves", obj)
}
