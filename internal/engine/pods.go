package engine

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/podhealth"
	"github.com/app-operator/app-operator/internal/resources"
)

// A kind that runs pods (through a Deployment or a StatefulSet) reports what keeps them from
// running (podhealth.Failure) within seconds: it watches its pods, and a
// pass reads them from the cache. Only an event that changes a pod's
// failure wakes a pass, so a failing pod costs one status write, not one
// per kubelet update.

// podKind keys the pods of a resource among the observed children.
const podKind = "Pod"

// runsPods reports whether the kind's children run pods (a Deployment or
// a StatefulSet).
func (k Kind[T]) runsPods() bool {
	return slices.ContainsFunc(k.Owns, func(o client.Object) bool {
		switch o.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet:
			return true
		}
		return false
	})
}

// watchPods adds the watch of the kind's pods to b.
func (k Kind[T]) watchPods(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(PodOwner(k.Name)), builder.WithPredicates(podFailureChanged()))
}

// observePods puts the pods of obj, a resource of the kind kindName, into
// children (under ChildKey(podKind, name)).
func observePods(ctx context.Context, r client.Reader, kindName string, obj client.Object, children Observed) error {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: kindName, resources.LabelInstance: obj.GetName()}); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		children[ChildKey(podKind, pods.Items[i].Name)] = &pods.Items[i]
	}
	return nil
}

// PodsOf returns the pods among the observed objects, in no particular
// order.
func PodsOf(children Observed) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, o := range children {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// PodOwner maps a pod to the resource of the kind kindName it runs for, by
// its labels.
func PodOwner(kindName string) handler.MapFunc {
	return func(_ context.Context, pod client.Object) []reconcile.Request {
		l := pod.GetLabels()
		if l[resources.LabelName] != kindName || l[resources.LabelManagedBy] != resources.ManagedBy || l[resources.LabelInstance] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: l[resources.LabelInstance]}}}
	}
}

// podFailureChanged passes the pod events that change what podhealth.Failure
// says of the pod, or which of its containers run without being ready (what
// podhealth.ReadinessFailure looks at).
func podFailureChanged() predicate.Predicate {
	failure := func(o client.Object) conditions.Failure {
		if p, ok := o.(*corev1.Pod); ok {
			if f := podhealth.Failure(p); f != nil {
				return *f
			}
		}
		return conditions.Failure{}
	}
	unready := func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok {
			return podhealth.UnreadyContainers(p)
		}
		return nil
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return failure(e.Object) != conditions.Failure{} || len(unready(e.Object)) > 0
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return failure(e.ObjectOld) != failure(e.ObjectNew) || !slices.Equal(unready(e.ObjectOld), unready(e.ObjectNew))
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { return failure(e.Object) != conditions.Failure{} },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
