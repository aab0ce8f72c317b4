package status

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// RedisEnterpriseCluster sets the conditions of a RedisEnterpriseCluster
// from its state (which the pass's step set, with status.primary and
// status.nodes), the step it took or waits for (cause: the reason that
// names why it waits, where there is one), and the pass's failure
// (nil on success), which makes the state Error. observedGeneration moves
// only after a successful pass.
func RedisEnterpriseCluster(st *redisv1alpha1.RedisEnterpriseClusterStatus, generation int64, took, waiting, cause string, failure *conditions.Failure, now metav1.Time) {
	if failure != nil {
		st.State = redisv1alpha1.StateError
	}
	st.State = cmp.Or(st.State, redisv1alpha1.StateBootstrappingFirstPod)
	c := newTriple()
	switch st.State {
	case redisv1alpha1.StateError:
		c.stuck(failure)
	case redisv1alpha1.StateRunning:
		c.available("One primary and every replica in sync")
	case redisv1alpha1.StateBootstrappingFirstPod:
		c.changing(redisv1alpha1.ReasonBootstrapping, cmp.Or(took, waiting, "Choosing the first primary"))
	case redisv1alpha1.StateRunningRollingUpdate:
		c.changing(redisv1alpha1.ReasonRollingUpdate, cmp.Or(took, waiting, "Replacing the nodes"))
	default:
		c.changing(cmp.Or(cause, redisv1alpha1.ReasonInitializing), cmp.Or(took, waiting, "Giving the nodes their roles"))
	}
	c.set(&st.Conditions, generation, now)
	if failure == nil {
		st.ObservedGeneration = generation
	}
}
