package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
)

// deployment returns a Deployment of generation 3 wanting want replicas,
// whose controller observed observedGen and reports the counts given.
func deployment(want, observedGen, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(want)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: int64(observedGen),
			Replicas:           replicas, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available,
			Conditions: conds,
		},
	}
}

type want struct {
	ready, progressing, degraded metav1.ConditionStatus
	reason                       string // of Ready
}

func TestWorkloadConditions(t *testing.T) {
	stalled := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
	quota := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Message: "exceeded quota"}
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		failure *conditions.Failure
		want    want
	}{
		{"should wait while the Deployment does not exist", nil, nil,
			want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, conditions.ReasonRolloutInProgress}},
		{"should wait for the Deployment controller to see the new spec", deployment(2, 2, 2, 2, 2), nil,
			want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, conditions.ReasonRolloutInProgress}},
		{"should wait while pods are updated", deployment(3, 3, 3, 1, 3), nil,
			want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, conditions.ReasonRolloutInProgress}},
		{"should wait while old pods terminate", deployment(2, 3, 3, 2, 2), nil,
			want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, conditions.ReasonRolloutInProgress}},
		{"should wait while updated pods become available", deployment(2, 3, 2, 2, 1), nil,
			want{metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, conditions.ReasonRolloutInProgress}},
		{"should be ready when every pod is updated and available", deployment(2, 3, 2, 2, 2), nil,
			want{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, conditions.ReasonAvailable}},
		{"should be ready when scaled to zero", deployment(0, 3, 0, 0, 0), nil,
			want{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, conditions.ReasonAvailable}},
		{"should be degraded when the rollout exceeded its deadline", deployment(2, 3, 2, 1, 1, stalled), nil,
			want{metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, conditions.ReasonProgressDeadlineExceeded}},
		{"should be degraded when pods cannot be created", deployment(2, 3, 0, 0, 0, quota), nil,
			want{metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, conditions.ReasonReplicaFailure}},
		{"should report a failure over an available Deployment", deployment(2, 3, 2, 2, 2),
			&conditions.Failure{Reason: conditions.ReasonChildConflict, Message: "Service web exists"},
			want{metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, conditions.ReasonChildConflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			SetWorkloadConditions(&conds, 7, tt.d, tt.failure, metav1.Now())
			got := want{
				ready:       find(t, conds, conditions.Ready).Status,
				progressing: find(t, conds, conditions.Progressing).Status,
				degraded:    find(t, conds, conditions.Degraded).Status,
				reason:      find(t, conds, conditions.Ready).Reason,
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			for _, c := range conds {
				if c.ObservedGeneration != 7 {
					t.Errorf("%s has observedGeneration %d, want 7", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestTransitionTimeMovesOnlyWithStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	var conds []metav1.Condition
	SetWorkloadConditions(&conds, 1, deployment(2, 3, 2, 2, 2), nil, t0)
	before := append([]metav1.Condition(nil), conds...)

	// Same state, later: nothing changes, so no status write follows.
	SetWorkloadConditions(&conds, 1, deployment(2, 3, 2, 2, 2), nil, t1)
	if diff := cmp.Diff(before, conds); diff != "" {
		t.Errorf("an unchanged state changed the conditions (-before +after):\n%s", diff)
	}

	// Ready turns False: its time moves, Degraded's does not.
	SetWorkloadConditions(&conds, 2, deployment(3, 3, 2, 2, 2), nil, t1)
	if got := find(t, conds, conditions.Ready).LastTransitionTime; !got.Equal(&t1) {
		t.Errorf("Ready lastTransitionTime = %v, want %v", got, t1)
	}
	if got := find(t, conds, conditions.Degraded).LastTransitionTime; !got.Equal(&t0) {
		t.Errorf("Degraded lastTransitionTime = %v, want %v (its status did not change)", got, t0)
	}
}

func TestAppServiceStatus(t *testing.T) {
	now := metav1.Now()
	st := appv1.AppServiceStatus{ObservedGeneration: 4}
	AppService(&st, 5, "app=web", deployment(2, 3, 2, 2, 2), nil, now)
	want := appv1.AppServiceStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2, Selector: "app=web", ObservedGeneration: 5}
	if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(appv1.AppServiceStatus{}, "Conditions")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// A failed pass keeps observedGeneration where the last success left it.
	AppService(&st, 6, "app=web", deployment(2, 3, 2, 2, 2), &conditions.Failure{Reason: conditions.ReasonApplyRejected, Message: "no"}, now)
	if st.ObservedGeneration != 5 {
		t.Errorf("observedGeneration = %d after a failed pass, want 5", st.ObservedGeneration)
	}
}

func find(t *testing.T, conds []metav1.Condition, condType string) metav1.Condition {
	t.Helper()
	for _, c := range conds {
		if c.Type == condType {
			return c
		}
	}
	t.Fatalf("no %s condition in %v", condType, conds)
	return metav1.Condition{}
}

func TestStableMessageDropsWhatChangesBetweenAttempts(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"should drop the pod name and the usage of a quota failure",
			`pods "ms-7d9f8-x2k4q" is forbidden: exceeded quota: microservicedeploy-quota, requested: limits.cpu=2, used: limits.cpu=28, limited: limits.cpu=28`,
			`pods is forbidden: exceeded quota: microservicedeploy-quota, requested: limits.cpu=2, limited: limits.cpu=28`},
		{"should drop the pod name of an admission failure",
			`pods "ms-7d9f8-abcde" is forbidden: violates PodSecurity "restricted:latest": privileged`,
			`pods is forbidden: violates PodSecurity "restricted:latest": privileged`},
		{"should keep a message without changing values", "exceeded quota", "exceeded quota"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stableMessage(tt.in); got != tt.want {
				t.Errorf("stableMessage(%q) =\n%q, want\n%q", tt.in, got, tt.want)
			}
		})
	}
}
