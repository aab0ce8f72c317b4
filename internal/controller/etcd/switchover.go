package etcd

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// refusedMove is the record and the event of a request the planner
// refused; nil when d refuses none.
func refusedMove(request string, d etcdcluster.Decision, leader string, now metav1.Time) (*switchover.Status, []engine.Notice) {
	if request == "" || d.Refusal == nil {
		return nil, nil
	}
	msg := d.Refusal.Message(leader)
	return &switchover.Status{Request: request, Target: d.Refusal.Target, Outcome: switchover.Refused, Message: msg, Time: now},
		[]engine.Notice{{Type: corev1.EventTypeWarning, Reason: switchover.Refused, Action: "Switchover", Message: msg}}
}

// claimMove records the request as handled, InProgress, before the
// leadership is moved, checked against the resourceVersion the pass read:
// a move is asked of etcd once per request, whatever happens next, and of
// two passes that decided from the same version only the first moves it.
func (e *etcdOps) claimMove(ctx context.Context, o *etcdv1beta2.EtcdCluster, request string, d etcdcluster.Decision, now metav1.Time) (*switchover.Status, error) {
	rec := &switchover.Status{Request: request, Target: d.Action.Member, Outcome: switchover.InProgress, Time: now, Message: d.Message}
	claimed := o.DeepCopy()
	claimed.Status.LastSwitchover = rec
	if err := e.client.Status().Patch(ctx, claimed, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("record the switchover request: %w", err)
	}
	o.ResourceVersion, o.Status.LastSwitchover = claimed.ResourceVersion, rec
	return rec, nil
}

// finishMove settles a request left InProgress (the pass that moved the
// leadership stopped before it recorded the outcome): done once leader,
// as observed, is its target, failed once another member leads.
func finishMove(last *switchover.Status, leader string) *switchover.Status {
	if last == nil || last.Outcome != switchover.InProgress || leader == "" {
		return last
	}
	out := *last
	if leader == last.Target {
		out.Outcome, out.Message = switchover.Done, fmt.Sprintf("%s is the leader", leader)
	} else {
		out.Outcome, out.Message = switchover.Failed, fmt.Sprintf("The leadership did not move to %s: %s leads", last.Target, leader)
	}
	return &out
}

// leaderOf is the member that leads, as observed; "" when none does.
func leaderOf(obs etcdcluster.Observed) string {
	for _, m := range obs.Members {
		if m.Leader {
			return m.Name
		}
	}
	return ""
}
