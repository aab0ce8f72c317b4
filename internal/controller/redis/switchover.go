package redis

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// switchoverRecord is what a pass records of the switchover request
// request once the planner answered it with d: the handover claimed
// (InProgress, written with the step's claim, before any node is
// touched), or the refusal; nil when d does not answer it.
func switchoverRecord(request string, d redisenterprisecluster.Decision, primary string, now metav1.Time) *switchover.Status {
	switch {
	case request == "":
		return nil
	case d.Switchover:
		return &switchover.Status{Request: request, Target: d.Target, Outcome: switchover.InProgress, Time: now,
			Message: fmt.Sprintf("Moving the primary from %s to %s", primary, d.Target)}
	case d.Refusal != nil:
		return &switchover.Status{Request: request, Target: d.Refusal.Target, Outcome: switchover.Refused, Time: now,
			Message: d.Refusal.Message(primary)}
	}
	return nil
}

// refusedNotice is the event of a refused request; none when r is no
// refusal.
func refusedNotice(r *switchover.Status) []engine.Notice {
	if r == nil || r.Outcome != switchover.Refused {
		return nil
	}
	return []engine.Notice{{Type: corev1.EventTypeWarning, Reason: switchover.Refused, Action: "Switchover", Message: r.Message}}
}

// finishSwitchover settles a request left InProgress by a pass that
// stopped before it recorded the outcome (the operator stopped, or the
// step failed after the handover): done once the status names its target
// the primary and that node says it is one, failed once another node is
// recorded.
func finishSwitchover(last *switchover.Status, primary string, nodes []redisv1alpha1.NodeStatus) *switchover.Status {
	if last == nil || last.Outcome != switchover.InProgress || primary == "" {
		return last
	}
	out := *last
	if primary != last.Target {
		out.Outcome = switchover.Failed
		out.Message = fmt.Sprintf("The primary did not move to %s: %s is the primary", last.Target, primary)
		return &out
	}
	for _, n := range nodes {
		if n.Name == primary && n.Role == redisv1alpha1.RolePrimary {
			out.Outcome = switchover.Done
			out.Message = fmt.Sprintf("%s is the primary", primary)
			return &out
		}
	}
	return last
}
