package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// etcdInput is what a pass of an EtcdCluster observes and decides.
type etcdInput struct {
	Generation int64
	Spec       etcdv1beta2.EtcdClusterSpec
	Status     etcdv1beta2.EtcdClusterStatus
	View       EtcdView
	Failure    *conditions.Failure
}

// FuzzEtcdClusterStatus: whatever the pass read and decided, the status
// holds valid Ready, Progressing and Degraded conditions of the current
// generation; Ready is True only without a failure, at the spec, with
// every member healthy; a failure is Degraded; the members are the
// view's, or the recorded ones when the pass read none; and the same
// input gives the same status.
func FuzzEtcdClusterStatus(f *testing.F) {
	f.Add([]byte(`{"Generation":2,"Spec":{"size":3,"version":"3.6.16"},"View":{"Observed":true,"Members":[{"name":"example-0","id":"1","healthy":true,"leader":true,"version":"3.6.16"}],"Step":{"Reason":"Scaling","Message":"Adding member example-1"}}}`))
	f.Add([]byte(`{"Generation":1,"Spec":{"size":3,"version":"3.6.16"},"Failure":{"Reason":"QuorumLost","Message":"down: example-1, example-2"},"View":{"Observed":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in etcdInput
		decode(data, &in, &in.Generation, &in.Status.ObservedGeneration)
		// Reasons are the planner's and the engine's, not any string.
		decisionReasons := []string{"", etcdv1beta2.ReasonScaling, etcdv1beta2.ReasonUpgrading, etcdv1beta2.ReasonReplacing, etcdv1beta2.ReasonMemberUnhealthy}
		in.View.Step.Reason = decisionReasons[len(in.View.Step.Reason)%len(decisionReasons)]
		if in.Failure != nil {
			reasons := append([]string{etcdv1beta2.ReasonQuorumLost, etcdv1beta2.ReasonScaleInRefused, etcdv1beta2.ReasonVersionSkew,
				conditions.ReasonImagePullFailed, conditions.ReasonReadinessProbeFailed, conditions.ReasonCrashLoopBackOff, conditions.ReasonStepFailed}, failureReasons...)
			in.Failure.Reason = reasons[len(in.Failure.Message)%len(reasons)]
		}
		if errs := metav1validation.ValidateConditions(in.Status.Conditions, field.NewPath("status", "conditions")); len(errs) > 0 {
			t.Skipf("the API server refuses the previous conditions: %v", errs.ToAggregate())
		}
		st := *in.Status.DeepCopy()
		EtcdCluster(&st, in.Generation, &in.Spec, "sel", in.View, in.Failure, fuzzNow)
		if errs := metav1validation.ValidateConditions(st.Conditions, field.NewPath("status", "conditions")); len(errs) > 0 {
			t.Fatalf("conditions the API server refuses: %v", errs.ToAggregate())
		}
		for _, ct := range []string{conditions.Ready, conditions.Progressing, conditions.Degraded} {
			c := meta.FindStatusCondition(st.Conditions, ct)
			if c == nil || c.ObservedGeneration != in.Generation {
				t.Fatalf("%s = %+v, want one of generation %d", ct, c, in.Generation)
			}
		}
		wantMembers := in.View.Members
		if wantMembers == nil {
			wantMembers = in.Status.Members
		}
		if !equality.Semantic.DeepEqual(st.Members, wantMembers) || st.Size != int32(len(st.Members)) || st.TargetVersion != in.Spec.Version {
			t.Fatalf("members %+v size %d target %q", st.Members, st.Size, st.TargetVersion)
		}
		healthy := true
		for _, m := range st.Members {
			healthy = healthy && m.Healthy
		}
		if meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) &&
			((in.Failure != nil && in.Failure.Reason != conditions.ReasonReadinessProbeFailed) || !in.View.Observed || !in.View.Step.done() || !healthy) {
			t.Fatalf("Ready with failure %+v, view %+v", in.Failure, in.View)
		}
		if in.Failure != nil && in.Failure.Reason != conditions.ReasonReadinessProbeFailed && !meta.IsStatusConditionTrue(st.Conditions, conditions.Degraded) {
			t.Fatalf("failure %+v not Degraded", in.Failure)
		}
		if in.View.Step.Reason == etcdv1beta2.ReasonMemberUnhealthy && in.Failure == nil && in.View.Observed && !meta.IsStatusConditionTrue(st.Conditions, conditions.Degraded) {
			t.Fatal("unhealthy members not Degraded")
		}
		again := *in.Status.DeepCopy()
		EtcdCluster(&again, in.Generation, &in.Spec, "sel", in.View, in.Failure, metav1.NewTime(fuzzNow.Add(1)))
		for i := range again.Conditions {
			again.Conditions[i].LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		if !equality.Semantic.DeepEqual(st, again) {
			t.Fatalf("the same input gave another status")
		}
	})
}
