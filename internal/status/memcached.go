package status

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
)

// Memcached sets the status of a Memcached from its Deployment d (nil when
// missing), the pods its selector matches and the pass's failure (nil on
// success). observedGeneration moves only after a successful pass.
func Memcached(st *cachev1alpha1.MemcachedStatus, generation int64, selector string, d *appsv1.Deployment, pods []*corev1.Pod, failure *conditions.Failure, now metav1.Time) {
	w := SetWorkloadConditions(&st.Conditions, generation, d, failure, now)
	st.Replicas = w.Replicas
	st.ReadyReplicas = w.ReadyReplicas
	st.Selector = selector
	st.Nodes = Nodes(pods)
	if failure == nil {
		st.ObservedGeneration = generation
	}
}

// Nodes returns the sorted names of the pods that are memcached servers
// (see IsNode). Sorting keeps the list from changing, and status from being
// written, when only the order of the pods read changes.
func Nodes(pods []*corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		if IsNode(p) {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names
}

// IsNode reports whether a pod counts as a memcached server: it is not being
// deleted and has not terminated. A pending pod counts (it is one of the
// servers, about to start); one that failed or was evicted does not, nor
// does one on its way out after a scale-down.
func IsNode(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
