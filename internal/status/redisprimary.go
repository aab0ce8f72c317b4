package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// RedisPrimaryHistory returns status.primaryHistory once the recorded
// primary moved from from to to for reason (Failover, Switchover or
// Handover) at now: the change first, then at most
// MaxPrimaryHistory-1 of the changes before. A first primary (from
// empty), or none (to empty or equal to from), is no change. An empty
// reason takes the change back (a step that failed before it moved the
// primary): the newest entry goes when it is the change from to to from.
// history is never modified.
func RedisPrimaryHistory(history []redisv1alpha1.PrimaryChange, from, to, reason string, now metav1.Time) []redisv1alpha1.PrimaryChange {
	if from == "" || to == "" || from == to {
		return history
	}
	if reason == "" {
		if len(history) > 0 && history[0].From == to && history[0].To == from {
			return history[1:]
		}
		return history
	}
	out := make([]redisv1alpha1.PrimaryChange, 0, min(len(history)+1, redisv1alpha1.MaxPrimaryHistory))
	out = append(out, redisv1alpha1.PrimaryChange{From: from, To: to, Reason: reason, Time: now})
	for _, c := range history {
		if len(out) == redisv1alpha1.MaxPrimaryHistory {
			break
		}
		out = append(out, c)
	}
	return out
}
