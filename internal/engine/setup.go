package engine

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Setup builds the kind's controller with mgr: its reconciler, the watch
// of the resources and of their children, and the kind's own watches.
func (k Kind[T]) Setup(mgr ctrl.Manager, env *Env) error {
	r := NewReconciler(k, mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("app-operator-"+k.Name), env)
	r.indexed = true
	r.ownWrites = &OwnWrites{}
	// Status writes bump no generation: the generation predicate keeps the
	// operator's own status writes from waking it up again; the pause
	// annotation, set or removed, wakes it all the same. The first
	// predicate sees every update before it.
	b := ctrl.NewControllerManagedBy(mgr).
		Named(k.Name).
		For(k.New(), builder.WithPredicates(
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { r.statusWrites.ForgetIfShown(e.ObjectNew); return true }},
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, pauseChanged(), annotationsChanged(k.WakeOn)))).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: k.workers(env.Options)})
	for _, o := range k.Owns {
		if _, ok := o.(*appsv1.Deployment); ok {
			b = b.Owns(o, builder.WithPredicates(r.rollouts.recordAnswers(), r.ownWrites.notEcho()))
			continue
		}
		b = b.Owns(o, builder.WithPredicates(r.ownWrites.notEcho()))
	}
	if k.runsPods() {
		b = k.watchPods(b)
	}
	if k.Watch != nil {
		var err error
		if b, err = k.Watch(mgr, b); err != nil {
			return fmt.Errorf("watch for %s: %w", k.Name, err)
		}
	}
	return b.Complete(r)
}

// workers is how many resources of the kind are reconciled at once: a
// data service's passes wait on its members over the network, so its
// kinds have workers of their own (Options.StatefulReconciles).
func (k Kind[T]) workers(o Options) int {
	if k.phases != nil {
		return o.StatefulReconciles
	}
	return o.MaxConcurrentReconciles
}

// ControllerUIDField indexes the owned types by the uid of their
// controller, so that prune lists a resource's children without looking
// at every child in the namespace.
const ControllerUIDField = ".metadata.controller.uid"

// controllerUID is the index function of ControllerUIDField.
func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.UID != "" {
		return []string{string(ref.UID)}
	}
	return nil
}
