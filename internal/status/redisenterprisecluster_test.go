package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

func TestRedisEnterpriseCluster(t *testing.T) {
	now := metav1.Now()
	type want struct {
		state                        redisv1alpha1.ClusterState
		ready, progressing, degraded metav1.ConditionStatus
		readyReason                  string
		observed                     int64
	}
	tests := []struct {
		name    string
		state   redisv1alpha1.ClusterState
		took    string
		waiting string
		cause   string
		failure *conditions.Failure
		want    want
	}{
		{"should be Ready when Running", redisv1alpha1.StateRunning, "", "", "", nil,
			want{redisv1alpha1.StateRunning, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse, conditions.ReasonAvailable, 2}},
		{"should be bootstrapping before any status", "", "", "waiting for a node to answer", "", nil,
			want{redisv1alpha1.StateBootstrappingFirstPod, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, redisv1alpha1.ReasonBootstrapping, 2}},
		{"should be progressing during a failover", redisv1alpha1.StateInitializing, "promoted r-1", "", "", nil,
			want{redisv1alpha1.StateInitializing, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, redisv1alpha1.ReasonInitializing, 2}},
		{"should be progressing during a rolling update", redisv1alpha1.StateRunningRollingUpdate, "replaced r-2", "", "", nil,
			want{redisv1alpha1.StateRunningRollingUpdate, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, redisv1alpha1.ReasonRollingUpdate, 2}},
		{"should name why a failover is held back", redisv1alpha1.StateInitializing, "", "the primary r-0 is not answering (for 4s): failing over after 30s",
			redisv1alpha1.ReasonFailoverPending, nil,
			want{redisv1alpha1.StateInitializing, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, redisv1alpha1.ReasonFailoverPending, 2}},
		{"should be Error and Degraded on a failure, keeping the observed generation", redisv1alpha1.StateRunning, "", "", "",
			&conditions.Failure{Reason: redisv1alpha1.ReasonNoPrimary, Message: "the primary r-0 is gone and no other node answers"},
			want{redisv1alpha1.StateError, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, redisv1alpha1.ReasonNoPrimary, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &redisv1alpha1.RedisEnterpriseClusterStatus{State: tt.state, ObservedGeneration: 1}
			RedisEnterpriseCluster(st, 2, tt.took, tt.waiting, tt.cause, tt.failure, now)
			ready := meta.FindStatusCondition(st.Conditions, conditions.Ready)
			got := want{st.State, ready.Status, meta.FindStatusCondition(st.Conditions, conditions.Progressing).Status,
				meta.FindStatusCondition(st.Conditions, conditions.Degraded).Status, ready.Reason, st.ObservedGeneration}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if ready.ObservedGeneration != 2 || ready.Message == "" {
				t.Errorf("Ready = %+v", ready)
			}
			if msg := tt.took + tt.waiting; msg != "" && ready.Message != msg {
				t.Errorf("Ready message %q, want %q", ready.Message, msg)
			}
		})
	}
}
