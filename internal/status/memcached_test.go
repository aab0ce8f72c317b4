package status

import (
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
)

func pod(name string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	return p
}

func TestNodes(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{
		{"should list nothing without pods", nil, nil},
		{"should sort the names", []*corev1.Pod{
			pod("c", corev1.PodRunning, false), pod("a", corev1.PodRunning, false), pod("b", corev1.PodRunning, false),
		}, []string{"a", "b", "c"}},
		{"should list a pending pod, which is one of the servers", []*corev1.Pod{
			pod("a", corev1.PodRunning, false), pod("b", corev1.PodPending, false),
		}, []string{"a", "b"}},
		{"should leave out a pod being deleted after a scale-down", []*corev1.Pod{
			pod("a", corev1.PodRunning, false), pod("b", corev1.PodRunning, true),
		}, []string{"a"}},
		{"should leave out a failed or evicted pod", []*corev1.Pod{
			pod("a", corev1.PodRunning, false), pod("b", corev1.PodFailed, false),
		}, []string{"a"}},
		{"should leave out a pod that completed", []*corev1.Pod{
			pod("a", corev1.PodSucceeded, false), pod("b", corev1.PodRunning, false),
		}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Nodes(tt.pods)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodesOrderDoesNotDependOnTheOrderRead(t *testing.T) {
	pods := []*corev1.Pod{
		pod("m-7c4df-5t8lb", corev1.PodRunning, false), pod("m-7c4df-6v9nm", corev1.PodRunning, false),
		pod("m-7c4df-h9fmd", corev1.PodRunning, false), pod("m-7c4df-8fcd4", corev1.PodPending, false),
	}
	want := Nodes(pods)
	r := rand.New(rand.NewSource(1))
	for range 20 {
		r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		if diff := cmp.Diff(want, Nodes(pods)); diff != "" {
			t.Fatalf("the order read changed the list (-want +got):\n%s", diff)
		}
	}
}

func TestMemcachedStatus(t *testing.T) {
	now := metav1.Now()
	pods := []*corev1.Pod{pod("m-b", corev1.PodRunning, false), pod("m-a", corev1.PodRunning, false), pod("m-old", corev1.PodRunning, true)}
	st := cachev1alpha1.MemcachedStatus{ObservedGeneration: 4}
	Memcached(&st, 5, "sel", deployment(2, 3, 2, 2, 2), pods, nil, now)
	want := cachev1alpha1.MemcachedStatus{Nodes: []string{"m-a", "m-b"}, Replicas: 2, ReadyReplicas: 2, Selector: "sel", ObservedGeneration: 5}
	if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(cachev1alpha1.MemcachedStatus{}, "Conditions")); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got := find(t, st.Conditions, conditions.Ready); got.Status != metav1.ConditionTrue || got.ObservedGeneration != 5 {
		t.Errorf("Ready = %+v, want True for generation 5", got)
	}

	// Scaled down: the pod left behind disappears from the list.
	Memcached(&st, 6, "sel", deployment(1, 3, 1, 1, 1), pods[1:2], nil, now)
	if diff := cmp.Diff([]string{"m-a"}, st.Nodes); diff != "" {
		t.Errorf("nodes after a scale-down (-want +got):\n%s", diff)
	}

	// A failed pass keeps observedGeneration, and still reports the pods.
	Memcached(&st, 7, "sel", deployment(1, 3, 1, 1, 1), pods, &conditions.Failure{Reason: conditions.ReasonChildConflict, Message: "no"}, now)
	if st.ObservedGeneration != 6 {
		t.Errorf("observedGeneration = %d after a failed pass, want 6", st.ObservedGeneration)
	}
	if diff := cmp.Diff([]string{"m-a", "m-b"}, st.Nodes); diff != "" {
		t.Errorf("nodes after a failed pass (-want +got):\n%s", diff)
	}
	if got := find(t, st.Conditions, conditions.Ready); got.Status != metav1.ConditionFalse || got.Reason != conditions.ReasonChildConflict {
		t.Errorf("Ready = %+v, want False ChildConflict", got)
	}
}

func TestMemcachedStatusUnchangedWhenNothingChanged(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pods := []*corev1.Pod{pod("m-b", corev1.PodRunning, false), pod("m-a", corev1.PodRunning, false)}
	var st cachev1alpha1.MemcachedStatus
	Memcached(&st, 1, "sel", deployment(2, 3, 2, 2, 2), pods, nil, t0)
	before := *st.DeepCopy()
	pods[0], pods[1] = pods[1], pods[0]
	Memcached(&st, 1, "sel", deployment(2, 3, 2, 2, 2), pods, nil, metav1.NewTime(t0.Add(time.Hour)))
	if diff := cmp.Diff(before, st); diff != "" {
		t.Errorf("a pass that observed the same state changed the status (-before +after):\n%s", diff)
	}
}
