package stateful

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
)

// nodeNamed returns the node named, nil for a pod not scheduled ("") or a
// node that is no more.
func nodeNamed(ctx context.Context, c client.Reader, name string) (*corev1.Node, error) {
	if name == "" {
		return nil, nil
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return n, nil
}

// Cordoned reports whether the node named is cordoned.
func Cordoned(ctx context.Context, c client.Reader, name string) (bool, error) {
	n, err := nodeNamed(ctx, c, name)
	return n != nil && n.Spec.Unschedulable, err
}

// NodeNotReady reports whether the node named says it is not ready (its
// Ready condition False or Unknown).
func NodeNotReady(ctx context.Context, c client.Reader, name string) (bool, error) {
	n, err := nodeNamed(ctx, c, name)
	if n == nil || err != nil {
		return false, err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status != corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

// CordonChanged passes a Node's updates that cordon or uncordon it.
func CordonChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			return ok1 && ok2 && o.Spec.Unschedulable != n.Spec.Unschedulable
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// OwnersOfPodsOn maps a Node to the resources of kindName with a pod on
// it, from the cached pods.
func OwnersOfPodsOn(c client.Reader, kindName string) handler.MapFunc {
	owner := engine.PodOwner(kindName)
	return func(ctx context.Context, node client.Object) []reconcile.Request {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.MatchingLabels{resources.LabelName: kindName, resources.LabelManagedBy: resources.ManagedBy}); err != nil {
			return nil
		}
		seen := map[reconcile.Request]bool{}
		var out []reconcile.Request
		for i := range pods.Items {
			if pods.Items[i].Spec.NodeName != node.GetName() {
				continue
			}
			for _, r := range owner(ctx, &pods.Items[i]) {
				if !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
		return out
	}
}
