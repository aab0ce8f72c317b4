package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

func TestEtcdClusterStatus(t *testing.T) {
	spec := &etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", Repository: etcdv1beta2.DefaultRepository}
	three := []etcdv1beta2.EtcdMember{
		{Name: "example-0", ID: "1", Healthy: true, Leader: true, Version: "3.6.16"},
		{Name: "example-1", ID: "2", Healthy: true, Version: "3.6.15"},
		{Name: "example-2", ID: "3", Healthy: true, Version: "3.6.16"},
	}
	tests := []struct {
		name    string
		view    EtcdView
		failure *conditions.Failure
		// ready, progressing and degraded are each condition's status and reason.
		ready, progressing, degraded string
		leader, current              string
	}{
		{name: "at the spec", view: EtcdView{Observed: true, Members: three},
			ready: "True Available", progressing: "False RolloutComplete", degraded: "False AsExpected", leader: "example-0", current: "3.6.15"},
		{name: "scaling", view: EtcdView{Observed: true, Members: three, Step: EtcdStep{Reason: etcdv1beta2.ReasonScaling, Message: "Adding member example-3"}},
			ready: "False Scaling", progressing: "True Scaling", degraded: "False AsExpected", leader: "example-0", current: "3.6.15"},
		{name: "a member unhealthy", view: EtcdView{Observed: true, Members: three, Step: EtcdStep{Reason: etcdv1beta2.ReasonMemberUnhealthy, Message: "down: example-1"}},
			ready: "False MemberUnhealthy", progressing: "False MemberUnhealthy", degraded: "True MemberUnhealthy", leader: "example-0", current: "3.6.15"},
		{name: "the quorum lost", view: EtcdView{Observed: true, Members: three},
			failure: &conditions.Failure{Reason: etcdv1beta2.ReasonQuorumLost, Message: "down: example-1, example-2"},
			ready:   "False QuorumLost", progressing: "False QuorumLost", degraded: "True QuorumLost", leader: "example-0", current: "3.6.15"},
		{name: "the version's image cannot be pulled",
			failure: &conditions.Failure{Reason: conditions.ReasonImagePullFailed, Message: `Pod example-0: container etcd cannot pull image "quay.io/coreos/etcd:v3.6.16"`},
			ready:   "False VersionUnavailable", progressing: "False VersionUnavailable", degraded: "True VersionUnavailable"},
		{name: "a learner not ready is no failure", view: EtcdView{Observed: true, Members: three, Step: EtcdStep{Reason: etcdv1beta2.ReasonScaling, Message: "Learner example-3 is catching up"}},
			failure: &conditions.Failure{Reason: conditions.ReasonReadinessProbeFailed, Message: "Pod example-3 ..."},
			ready:   "False Scaling", progressing: "True Scaling", degraded: "False AsExpected", leader: "example-0", current: "3.6.15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &etcdv1beta2.EtcdClusterStatus{}
			EtcdCluster(st, 4, spec, "sel", tt.view, tt.failure, metav1.Now())
			for _, c := range []struct{ condType, want string }{{conditions.Ready, tt.ready}, {conditions.Progressing, tt.progressing}, {conditions.Degraded, tt.degraded}} {
				got := meta.FindStatusCondition(st.Conditions, c.condType)
				if got == nil || string(got.Status)+" "+got.Reason != c.want || got.ObservedGeneration != 4 {
					t.Errorf("%s = %+v, want %s", c.condType, got, c.want)
				}
			}
			if st.Leader != tt.leader || st.CurrentVersion != tt.current || st.TargetVersion != "3.6.16" || st.Size != int32(len(tt.view.Members)) || st.Selector != "sel" {
				t.Errorf("status %+v", st)
			}
		})
	}
	st := &etcdv1beta2.EtcdClusterStatus{}
	EtcdCluster(st, 1, spec, "sel", EtcdView{Observed: true, Members: three}, nil, metav1.Now())
	EtcdCluster(st, 2, spec, "sel", EtcdView{}, &conditions.Failure{Reason: conditions.ReasonStepFailed, Message: "no answer"}, metav1.Now())
	if len(st.Members) != 3 || st.ObservedGeneration != 1 {
		t.Errorf("a pass that read nothing changed members %+v or observedGeneration %d", st.Members, st.ObservedGeneration)
	}
	if got := meta.FindStatusCondition(st.Conditions, conditions.Ready); got.Reason != conditions.ReasonStepFailed {
		t.Errorf("Ready %+v, want StepFailed", got)
	}
	if msg := meta.FindStatusCondition(func() []metav1.Condition {
		s := &etcdv1beta2.EtcdClusterStatus{}
		EtcdCluster(s, 1, spec, "sel", EtcdView{}, &conditions.Failure{Reason: conditions.ReasonImagePullFailed, Message: `Pod example-0: container etcd cannot pull image "quay.io/coreos/etcd:v3.6.16"`}, metav1.Now())
		return s.Conditions
	}(), conditions.Ready).Message; msg != `etcd version 3.6.16 is not available: image quay.io/coreos/etcd:v3.6.16 cannot be pulled (Pod example-0: container etcd cannot pull image "quay.io/coreos/etcd:v3.6.16")` {
		t.Errorf("VersionUnavailable message %q", msg)
	}
}
