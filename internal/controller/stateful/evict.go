package stateful

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator's own deletions of a ready member pod (rolls, restarts) go
// through the Eviction API, as a drain's do: the member's
// PodDisruptionBudget judges both, so that a drain and a step of the
// operator never take two serving members down at once.
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// ErrDisruptionRefused is EvictPodOfUID's error when the pod's
// PodDisruptionBudget allows no disruption now: another member is down or
// being evicted. The step waits and is tried again.
var ErrDisruptionRefused = errors.New("its PodDisruptionBudget allows no disruption now (another member is down, or a drain evicts one)")

// EvictPodOfUID removes the pod name, if it is still the pod of uid: a
// ready pod by eviction, which its budget may refuse (ErrDisruptionRefused);
// one that is not ready by deletion, since it serves nothing and no budget
// counts it (a cluster whose members are all down, waiting for a restart,
// is never refused). A pod that is gone or was replaced needs nothing.
func EvictPodOfUID(ctx context.Context, c client.Client, namespace, name string, uid types.UID) error {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.UID != uid || pod.DeletionTimestamp != nil {
		return nil
	}
	var err error
	if PodReady(pod) {
		err = c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: namespace, Name: name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
		})
	} else {
		err = c.Delete(ctx, pod, client.Preconditions{UID: &uid})
	}
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("evict pod %s: %w: %v", name, ErrDisruptionRefused, err)
	}
	return fmt.Errorf("remove pod %s: %w", name, err)
}

// PodReady reports whether pod passes its readiness probe.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
