package controller

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

	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/status"
)

// A kind that runs pods (through a Deployment or a StatefulSet) reports what keeps them from
// running (status.PodFailure) within seconds: it watches its pods, and a
// pass reads them from the cache. Only an event that changes a pod's
// failure wakes a pass, so a failing pod costs one status write, not one
// per kubelet update.

// runsPods reports whether the kind's children run pods (a Deployment or
// a StatefulSet).
func (k kind[T]) runsPods() bool {
	return slices.ContainsFunc(k.owns, func(o client.Object) bool {
		switch o.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet:
			return true
		}
		return false
	})
}

// watchPods adds the watch of the kind's pods to b.
func (k kind[T]) watchPods(b *builder.Builder) *builder.Builder {
	return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podOwner(k.name)), builder.WithPredicates(podFailureChanged()))
}

// observePods puts the pods of obj, a resource of the kind kindName, into
// children (under childKey(podKind, name)).
func observePods(ctx context.Context, r client.Reader, kindName string, obj client.Object, children observed) error {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: kindName, resources.LabelInstance: obj.GetName()}); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		children[childKey(podKind, pods.Items[i].Name)] = &pods.Items[i]
	}
	return nil
}

// podsOf returns the pods among the observed objects, in no particular
// order.
func podsOf(children observed) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, o := range children {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// podOwner maps a pod to the resource of the kind kindName it runs for, by
// its labels.
func podOwner(kindName string) handler.MapFunc {
	return func(_ context.Context, pod client.Object) []reconcile.Request {
		l := pod.GetLabels()
		if l[resources.LabelName] != kindName || l[resources.LabelManagedBy] != resources.ManagedBy || l[resources.LabelInstance] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: l[resources.LabelInstance]}}}
	}
}

// podFailureChanged passes the pod events that change what status.PodFailure
// says of the pod, or which of its containers run without being ready (what
// status.ReadinessFailure looks at).
func podFailureChanged() predicate.Predicate {
	failure := func(o client.Object) status.Failure {
		if p, ok := o.(*corev1.Pod); ok {
			if f := status.PodFailure(p); f != nil {
				return *f
			}
		}
		return status.Failure{}
	}
	unready := func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok {
			return status.UnreadyContainers(p)
		}
		return nil
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return failure(e.Object) != status.Failure{} || len(unready(e.Object)) > 0
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return failure(e.ObjectOld) != failure(e.ObjectNew) || !slices.Equal(unready(e.ObjectOld), unready(e.ObjectNew))
		},
		DeleteFunc:  func(e event.DeleteEvent) bool { return failure(e.Object) != status.Failure{} },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
