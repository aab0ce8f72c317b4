package engine

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestRolloutWaitRemaining(t *testing.T) {
	const settle = 5 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dep := func(generation, seen int64) Observed {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: generation}}
		d.Status.ObservedGeneration = seen
		return Observed{ChildKey("Deployment", "d"): d}
	}
	key := client.ObjectKey{Namespace: "ns", Name: "app"}
	for _, tc := range []struct {
		name string
		// waitedBefore is how long ago the wait started (negative: it has not).
		waitedBefore time.Duration
		// answeredBefore is how long ago the Deployment controller last
		// reported on any Deployment (negative: never).
		answeredBefore time.Duration
		children       Observed
		want           time.Duration
	}{
		{"should write at once when the Deployment is Observed", -1, -1, dep(2, 2), 0},
		{"should write at once without a Deployment", -1, -1, Observed{}, 0},
		{"should wait the settle time for a new spec", -1, -1, dep(2, 1), settle},
		{"should wait what is left of the settle time", 3 * time.Second, -1, dep(2, 1), 2 * time.Second},
		{"should stop waiting for a silent controller after the settle time", 6 * time.Second, -1, dep(2, 1), 0},
		{"should go on waiting while the controller reports on others", 6 * time.Second, time.Second, dep(2, 1), 4 * time.Second},
		{"should stop waiting at the bound however busy the controller", settleMax, 0, dep(2, 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			w := &rolloutWait{clock: clk, settle: settle}
			if tc.waitedBefore >= 0 {
				w.since.Store(key, start.Add(-tc.waitedBefore))
			}
			if tc.answeredBefore >= 0 {
				clk.SetTime(start.Add(-tc.answeredBefore))
				old := &appsv1.Deployment{}
				cur := old.DeepCopy()
				cur.Status.ObservedGeneration = 1
				w.recordAnswers().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur})
				clk.SetTime(start)
			}
			if got := w.Remaining(key, tc.children); got != tc.want {
				t.Errorf("Remaining = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRolloutWaitEndsOnceObserved(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	w := &rolloutWait{clock: clk, settle: time.Second}
	key := client.ObjectKey{Name: "app"}
	waiting := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	_ = w.Remaining(key, Observed{"Deployment/d": waiting})
	clk.SetTime(clk.Now().Add(2 * time.Second))
	if got := w.Remaining(key, Observed{"Deployment/d": waiting}); got != 0 {
		t.Fatalf("after the settle time: %v, want 0", got)
	}
	// Observed: the wait is forgotten, and a later change waits afresh.
	done := waiting.DeepCopy()
	done.Status.ObservedGeneration = 2
	_ = w.Remaining(key, Observed{"Deployment/d": done})
	if got := w.Remaining(key, Observed{"Deployment/d": waiting}); got != time.Second {
		t.Errorf("a new spec after the last was Observed waits %v, want the settle time", got)
	}
}
