package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
)

const quotaName = "microservicedeploy-quota"

// observed is an instance "me" whose Deployment is available at 3 replicas
// and whose quota is the operator's and leaves room for it, not exposed.
func observed(mutate func(*MicroServiceDeployObserved)) MicroServiceDeployObserved {
	o := MicroServiceDeployObserved{
		Deployment:      deployment(3, 3, 3, 3, 3),
		Quota:           QuotaCovers,
		QuotaName:       quotaName,
		ExposureReason:  conditions.ReasonNoBaseDomain,
		ExposureMessage: "no base domain",
	}
	if mutate != nil {
		mutate(&o)
	}
	return o
}

type msdWant struct {
	Ready, Degraded, Quota, Idle, Exposed string // status/reason
	URL                                   string
	ObservedGeneration                    int64
}

func TestMicroServiceDeployStatus(t *testing.T) {
	tests := []struct {
		name    string
		o       MicroServiceDeployObserved
		failure *conditions.Failure
		want    msdWant
	}{
		{"should be ready when the Deployment is available and the quota leaves room for the instance", observed(nil), nil,
			msdWant{"True/Available", "False/AsExpected", "True/QuotaApplied", "False/Active", "False/NoBaseDomain", "", 5}},
		{"should wait for the quota to be created", observed(func(o *MicroServiceDeployObserved) { o.Quota = QuotaMissing }), nil,
			msdWant{"False/QuotaPending", "False/AsExpected", "False/QuotaPending", "False/Active", "False/NoBaseDomain", "", 5}},
		{"should wait for the quota to leave room for the instance", observed(func(o *MicroServiceDeployObserved) { o.Quota = QuotaShort }), nil,
			msdWant{"False/QuotaPending", "False/AsExpected", "False/QuotaPending", "False/Active", "False/NoBaseDomain", "", 5}},
		{"should report a quota someone else created as a conflict", observed(func(o *MicroServiceDeployObserved) {
			o.Quota = QuotaForeign
		}), nil,
			msdWant{"False/QuotaConflict", "True/QuotaConflict", "False/QuotaConflict", "False/Active", "False/NoBaseDomain", "", 5}},
		{"should report the pass's failure before the quota and keep observedGeneration", observed(func(o *MicroServiceDeployObserved) {
			o.Quota = QuotaForeign
		}), &conditions.Failure{Reason: conditions.ReasonChildConflict, Message: "Service exists"},
			msdWant{"False/ChildConflict", "True/ChildConflict", "False/QuotaConflict", "False/Active", "False/NoBaseDomain", "", 4}},
		{"should be ready and idle when parked at zero replicas", observed(func(o *MicroServiceDeployObserved) {
			o.Idle, o.Deployment = true, deployment(0, 3, 0, 0, 0)
		}), nil,
			msdWant{"True/Available", "False/AsExpected", "True/QuotaApplied", "True/Parked", "False/NoBaseDomain", "", 5}},
		{"should show the URL once the Ingress is applied", observed(func(o *MicroServiceDeployObserved) {
			o.URL, o.IngressApplied, o.ExposureReason = "http://ms-v1.example.com/", true, conditions.ReasonIngressApplied
		}), nil,
			msdWant{"True/Available", "False/AsExpected", "True/QuotaApplied", "False/Active", "True/IngressApplied", "http://ms-v1.example.com/", 5}},
		{"should not show the URL before the Ingress is applied", observed(func(o *MicroServiceDeployObserved) {
			o.URL, o.ExposureReason = "http://ms-v1.example.com/", conditions.ReasonIngressApplied
		}), &conditions.Failure{Reason: conditions.ReasonApplyFailed, Message: "apply Deployment: timeout"},
			msdWant{"False/ApplyFailed", "True/ApplyFailed", "True/QuotaApplied", "False/Active", "False/RolloutInProgress", "", 4}},
		{"should explain that an instance needing auth is not exposed without it", observed(func(o *MicroServiceDeployObserved) {
			o.ExposureReason = conditions.ReasonAuthUnavailable
		}), nil,
			msdWant{"True/Available", "False/AsExpected", "True/QuotaApplied", "False/Active", "False/AuthUnavailable", "", 5}},
		{"should report a host another instance holds as a conflict and keep running", observed(func(o *MicroServiceDeployObserved) {
			o.ExposureReason, o.ExposureMessage = conditions.ReasonHostConflict, "Host ms-v1.example.com is held by MicroServiceDeploy other/ms-v1s0"
		}), nil,
			msdWant{"False/HostConflict", "True/HostConflict", "True/QuotaApplied", "False/Active", "False/HostConflict", "", 5}},
		{"should report a host conflict while the Deployment rolls out", observed(func(o *MicroServiceDeployObserved) {
			o.ExposureReason, o.ExposureMessage = conditions.ReasonHostConflict, "Host ms-v1.example.com is held by MicroServiceDeploy other/ms-v1s0"
			o.Deployment = deployment(3, 3, 3, 1, 1)
		}), nil,
			msdWant{"False/HostConflict", "True/HostConflict", "True/QuotaApplied", "False/Active", "False/HostConflict", "", 5}},
		{"should report a quota conflict before a host conflict", observed(func(o *MicroServiceDeployObserved) {
			o.ExposureReason, o.ExposureMessage = conditions.ReasonHostConflict, "Host ms-v1.example.com is held by MicroServiceDeploy other/ms-v1s0"
			o.Quota = QuotaForeign
		}), nil,
			msdWant{"False/QuotaConflict", "True/QuotaConflict", "False/QuotaConflict", "False/Active", "False/HostConflict", "", 5}},
		{"should report the pass's failure before a host conflict", observed(func(o *MicroServiceDeployObserved) {
			o.ExposureReason, o.ExposureMessage = conditions.ReasonHostConflict, "Host ms-v1.example.com is held by MicroServiceDeploy other/ms-v1s0"
		}), &conditions.Failure{Reason: conditions.ReasonApplyFailed, Message: "apply Deployment: timeout"},
			msdWant{"False/ApplyFailed", "True/ApplyFailed", "True/QuotaApplied", "False/Active", "False/HostConflict", "", 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := customv1.MicroServiceDeployStatus{ObservedGeneration: 4}
			MicroServiceDeploy(&st, 5, tt.o, tt.failure, metav1.Now())
			c := func(condType string) string {
				f := find(t, st.Conditions, condType)
				if f.ObservedGeneration != 5 {
					t.Errorf("%s has observedGeneration %d, want 5", condType, f.ObservedGeneration)
				}
				return string(f.Status) + "/" + f.Reason
			}
			got := msdWant{c(conditions.Ready), c(conditions.Degraded), c(conditions.QuotaReady), c(conditions.Idle), c(conditions.Exposed),
				st.URL, st.ObservedGeneration}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			find(t, st.Conditions, conditions.Progressing)
		})
	}
}

func TestMicroServiceDeployReplicaCounts(t *testing.T) {
	st := customv1.MicroServiceDeployStatus{}
	MicroServiceDeploy(&st, 1, observed(func(o *MicroServiceDeployObserved) { o.Deployment = deployment(3, 3, 4, 2, 1) }), nil, metav1.Now())
	want := customv1.MicroServiceDeployStatus{Replicas: 4, UpdatedReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1}
	st.Conditions = nil
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// A pass that finds the same state must leave the status as it was, even
// while Ready waits for the quota: otherwise every pass writes status.
func TestMicroServiceDeployStatusIsStableWhileWaitingForTheQuota(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	pending := observed(func(o *MicroServiceDeployObserved) { o.Quota = QuotaMissing })
	st := customv1.MicroServiceDeployStatus{}
	MicroServiceDeploy(&st, 1, pending, nil, t0)
	before := *st.DeepCopy()
	MicroServiceDeploy(&st, 1, pending, nil, t1)
	if diff := cmp.Diff(before, st); diff != "" {
		t.Errorf("an unchanged state changed the status (-before +after):\n%s", diff)
	}

	// The quota arrives: Ready turns True at t1.
	MicroServiceDeploy(&st, 1, observed(nil), nil, t1)
	if got := find(t, st.Conditions, conditions.Ready); got.Status != metav1.ConditionTrue || !got.LastTransitionTime.Equal(&t1) {
		t.Errorf("Ready = %s at %v, want True at %v", got.Status, got.LastTransitionTime, t1)
	}
}

// A lost host is named, with its holder, in Ready and Degraded as well as
// in Exposed, and a pass that finds the same state writes nothing.
func TestMicroServiceDeployStatusNamesTheHostHolder(t *testing.T) {
	const msg = "Host ms-v1.example.com is held by MicroServiceDeploy other/ms-v1s0, which claimed it first"
	lost := observed(func(o *MicroServiceDeployObserved) {
		o.ExposureReason, o.ExposureMessage = conditions.ReasonHostConflict, msg
	})
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := customv1.MicroServiceDeployStatus{}
	MicroServiceDeploy(&st, 1, lost, nil, t0)
	for _, c := range []string{conditions.Ready, conditions.Degraded, conditions.Exposed} {
		if got := find(t, st.Conditions, c).Message; got != msg {
			t.Errorf("%s message = %q, want %q", c, got, msg)
		}
	}
	before := *st.DeepCopy()
	MicroServiceDeploy(&st, 1, lost, nil, metav1.NewTime(t0.Add(time.Minute)))
	if diff := cmp.Diff(before, st); diff != "" {
		t.Errorf("an unchanged state changed the status (-before +after):\n%s", diff)
	}
}
