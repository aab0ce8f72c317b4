// Package controller holds the reconcilers of every app-operator kind and the
// engine they share.
package controller

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
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
var controllers = map[string]func(Options) registered{
	"appservice":             func(o Options) registered { return appServiceKind(o) },
	"webservice":             func(o Options) registered { return webServiceKind(o) },
	"microservicedeploy":     func(o Options) registered { return microServiceDeployKind(o) },
	"memcached":              func(o Options) registered { return memcachedKind(o) },
	"myweb":                  func(o Options) registered { return myWebKind(o) },
	"redisenterprisecluster": func(o Options) registered { return redisEnterpriseClusterKind(o) },
	"etcdcluster":            func(o Options) registered { return etcdClusterKind(o) },
	"etcdbackup":             func(o Options) registered { return etcdBackupKind(o) },
	"etcdrestore":            func(o Options) registered { return etcdRestoreKind(o) },
}

// registeredKinds returns the controller of every kind of kinds.All, in
// that order; an error names a kind without one, or a controller of no
// kind.
func registeredKinds(opts Options) ([]registered, error) {
	var out []registered
	for _, k := range kinds.All() {
		newKind, ok := controllers[k.Name()]
		if !ok {
			return nil, fmt.Errorf("kind %s has no controller", k.GVK.Kind)
		}
		r := newKind(opts)
		if name, gvk := r.kindOf(); name != k.Name() || gvk != k.GVK {
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
	env := newEngine(mgr.GetScheme(), opts)
	index := newChildIndex(mgr.GetFieldIndexer())
	// Each kind's controllers start with its first resource (heldKind);
	// the quota controller with the first MicroServiceDeploy.
	var held []*heldKind
	ks, err := registeredKinds(env.opts)
	if err != nil {
		return err
	}
	for _, k := range ks {
		h := newHeldKind(mgr, k.resource(), k.prunedTypes(), index)
		if err := k.setup(h, env); err != nil {
			return err
		}
		held = append(held, h)
	}
	quota := newHeldKind(mgr, &customv1.MicroServiceDeploy{}, nil, index)
	if err := setupNamespaceQuota(quota, env); err != nil {
		return err
	}
	for _, h := range append(held, quota) {
		if err := mgr.Add(manager.RunnableFunc(h.run)); err != nil {
			return err
		}
	}
	return nil
}

func (k kind[T]) setup(mgr ctrl.Manager, env *engine) error {
	r := newReconciler(k, mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("app-operator-"+k.name), env)
	r.indexed = true
	r.ownWrites = &ownWrites{}
	// Status writes bump no generation: the generation predicate keeps the
	// operator's own status writes from waking it up again. The first
	// predicate sees every update before it.
	b := ctrl.NewControllerManagedBy(mgr).
		Named(k.name).
		For(k.newObject(), builder.WithPredicates(
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { r.statusWrites.ForgetIfShown(e.ObjectNew); return true }},
			predicate.GenerationChangedPredicate{})).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: env.opts.MaxConcurrentReconciles})
	for _, o := range k.owns {
		if _, ok := o.(*appsv1.Deployment); ok {
			b = b.Owns(o, builder.WithPredicates(r.rollouts.recordAnswers(), r.ownWrites.notEcho()))
			continue
		}
		b = b.Owns(o, builder.WithPredicates(r.ownWrites.notEcho()))
	}
	if k.runsPods() {
		b = k.watchPods(b)
	}
	if k.watch != nil {
		var err error
		if b, err = k.watch(mgr, b); err != nil {
			return fmt.Errorf("watch for %s: %w", k.name, err)
		}
	}
	return b.Complete(r)
}

// controllerUIDField indexes the owned types by the uid of their
// controller, so that prune lists a resource's children without looking
// at every child in the namespace.
const controllerUIDField = ".metadata.controller.uid"

// controllerUID is the index function of controllerUIDField.
func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.UID != "" {
		return []string{string(ref.UID)}
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
		for _, o := range k.ownedTypes() {
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
		if acs, ok, err := k.buildAny(obj); ok {
			return acs, err
		}
	}
	return nil, fmt.Errorf("%T is not a kind app-operator serves", obj)
}
