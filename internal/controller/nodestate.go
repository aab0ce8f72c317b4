package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/resources"
)

// Two things the operator reads of a node. A drain cordons a node and
// then evicts its pods: a Redis primary on a cordoned node is handed over
// before its eviction, which its disruption budget holds meanwhile; the
// cordon is what says the drain has begun. A node that stops reporting
// (NotReady) may leave its pods' Ready condition as it was: an etcd member
// there that does not answer is down, not merely out of the operator's
// reach.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// transformNode is the cache transform of the Nodes: whether a node is
// cordoned and its Ready condition are all the operator reads of one from
// its cache, so the cache keeps those and the name, not the images,
// addresses and other conditions a Node carries.
func transformNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			kept.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return kept, nil
}

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

// cordoned reports whether the node named is cordoned.
func cordoned(ctx context.Context, c client.Reader, name string) (bool, error) {
	n, err := nodeNamed(ctx, c, name)
	return n != nil && n.Spec.Unschedulable, err
}

// nodeNotReady reports whether the node named says it is not ready (its
// Ready condition False or Unknown).
func nodeNotReady(ctx context.Context, c client.Reader, name string) (bool, error) {
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

// cordonChanged passes a Node's updates that cordon or uncordon it.
func cordonChanged() predicate.Predicate {
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

// ownersOfPodsOn maps a Node to the resources of kindName with a pod on
// it, from the cached pods.
func ownersOfPodsOn(c client.Reader, kindName string) handler.MapFunc {
	owner := podOwner(kindName)
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

// OnlyRead reports whether o's type is one the cache holds that the
// operator never applies (the Nodes), so that the apply schema leaves it
// out.
func OnlyRead(o client.Object) bool {
	_, ok := o.(*corev1.Node)
	return ok
}
