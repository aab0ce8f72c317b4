package status

import (
	"cmp"

	"k8s.io/apimachinery/pkg/api/meta"
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
func RedisEnterpriseCluster(st *redisv1alpha1.RedisEnterpriseClusterStatus, generation int64, took, waiting, cause string, failure *Failure, now metav1.Time) {
	if failure != nil {
		st.State = redisv1alpha1.StateError
	}
	st.State = cmp.Or(st.State, redisv1alpha1.StateBootstrappingFirstPod)
	ready := metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionFalse}
	progressing := metav1.Condition{Type: conditions.Progressing, Status: metav1.ConditionTrue}
	degraded := metav1.Condition{Type: conditions.Degraded, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected, Message: messageAsExpected}
	switch st.State {
	case redisv1alpha1.StateError:
		ready.Reason, ready.Message = failure.Reason, failure.Message
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, failure.Reason, failure.Message
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, failure.Reason, failure.Message
	case redisv1alpha1.StateRunning:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, conditions.ReasonAvailable, "One primary and every replica in sync"
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, conditions.ReasonRolloutComplete, messageRolloutComplete
	case redisv1alpha1.StateBootstrappingFirstPod:
		ready.Reason, ready.Message = redisv1alpha1.ReasonBootstrapping, cmp.Or(took, waiting, "Choosing the first primary")
		progressing.Reason, progressing.Message = ready.Reason, ready.Message
	case redisv1alpha1.StateRunningRollingUpdate:
		ready.Reason, ready.Message = redisv1alpha1.ReasonRollingUpdate, cmp.Or(took, waiting, "Replacing the nodes")
		progressing.Reason, progressing.Message = ready.Reason, ready.Message
	default:
		ready.Reason, ready.Message = cmp.Or(cause, redisv1alpha1.ReasonInitializing), cmp.Or(took, waiting, "Giving the nodes their roles")
		progressing.Reason, progressing.Message = ready.Reason, ready.Message
	}
	for _, c := range []metav1.Condition{ready, progressing, degraded} {
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if failure == nil {
		st.ObservedGeneration = generation
	}
}
