package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/controller"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/api/switchover"
)

// annotateEtcd sets the switchover annotation of the fixture's cluster.
func annotateEtcd(t *testing.T, f *etcdFixture, value string) {
	t.Helper()
	get(t, f.obj)
	if f.obj.Annotations == nil {
		f.obj.Annotations = map[string]string{}
	}
	f.obj.Annotations[switchover.Annotation] = value
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
}

// A request to move the leadership is taken by MoveLeader once: the
// request is recorded as handled before the call, and the annotation,
// left in place, moves nothing again and writes nothing.
func TestEtcdLeaderMovesOnDemandOnce(t *testing.T) {
	f := newEtcdFixture(t, 3)
	f.pass()
	f.pass()
	annotateEtcd(t, f, "e-2")
	f.pass()
	get(t, f.obj)
	if !slices.Equal(f.fake.Calls, []string{"move-leader 3"}) {
		t.Fatalf("calls %v, want the leadership moved to e-2 (ID 3)", f.fake.Calls)
	}
	if last := f.obj.Status.LastSwitchover; last == nil || last.Request != "e-2" || last.Target != "e-2" || last.Outcome != switchover.Done {
		t.Fatalf("lastSwitchover %+v", last)
	}
	if got := eventsOf(f.recorder); !slices.Contains(got, "Normal "+etcdv1beta2.EventLeaderMoved) {
		t.Errorf("events %v, want %s", got, etcdv1beta2.EventLeaderMoved)
	}
	f.pass()
	get(t, f.obj)
	if f.obj.Status.Leader != "e-2" {
		t.Errorf("status.leader %s, want e-2", f.obj.Status.Leader)
	}
	version := f.obj.ResourceVersion
	f.pass()
	f.pass()
	get(t, f.obj)
	if len(f.fake.Calls) != 1 || f.obj.ResourceVersion != version {
		t.Errorf("at rest: calls %v, resourceVersion %s -> %s", f.fake.Calls, version, f.obj.ResourceVersion)
	}
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, switchover.ConditionType); c == nil || c.Status != "True" {
		t.Errorf("Switchover condition %+v", c)
	}
}

// A request for the leader itself, a member that does not answer, or a
// name that is no member is refused with the reason, once, and moves
// nothing.
func TestEtcdLeaderMoveRefusedNamesTheTargetAndWhy(t *testing.T) {
	f := newEtcdFixture(t, 3)
	f.pass()
	f.pass()
	delete(f.fake.Endpoints, etcdURL(2))
	for _, c := range []struct{ target, why string }{{"e-0", switchover.AlreadyPrimary}, {"e-2", switchover.NotHealthy}, {"e-7", switchover.NotAMember}} {
		annotateEtcd(t, f, c.target)
		f.pass()
		get(t, f.obj)
		if len(f.fake.Calls) != 0 {
			t.Fatalf("%s: calls %v", c.target, f.fake.Calls)
		}
		cond := meta.FindStatusCondition(f.obj.Status.Conditions, switchover.ConditionType)
		if cond == nil || cond.Reason != switchover.Refused || !strings.Contains(cond.Message, switchover.Annotation) ||
			!strings.Contains(cond.Message, c.target) || !strings.Contains(cond.Message, c.why) {
			t.Errorf("%s: Switchover condition %+v, want refused naming it and %q", c.target, cond, c.why)
		}
		if got := eventsOf(f.recorder); !slices.Contains(got, "Warning "+switchover.Refused) {
			t.Errorf("%s: events %v", c.target, got)
		}
		version := f.obj.ResourceVersion
		f.pass()
		get(t, f.obj)
		if f.obj.ResourceVersion != version {
			t.Errorf("%s: the refusal was written again", c.target)
		}
	}
}

// The operator stops as etcd moves the leadership, before the move takes
// effect or after, its last write lost or not: the request was recorded
// as handled before the call, so a new operator does not move the
// leadership again, and it settles the outcome from the leader it sees.
func TestEtcdLeaderMoveStoppedIsNotRepeated(t *testing.T) {
	for _, after := range []bool{false, true} {
		for _, killed := range []bool{false, true} {
			t.Run(fmt.Sprintf("after %v killed %v", after, killed), func(t *testing.T) {
				f := newEtcdFixture(t, 3)
				f.pass()
				f.pass()
				annotateEtcd(t, f, "e-1")
				dead := &atomic.Bool{}
				old := controller.NewEtcdReconcilerAt(killable{Client: k8s, dead: dead}, f.fake.Dial, clock.RealClock{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				f.fake.Crash = func(int, string) bool { return true }
				f.fake.CrashAfter = after
				f.fake.OnCrash = func() { dead.Store(killed); cancel() }
				_, _ = old.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
				f.fake.Crash = nil
				for range 4 {
					f.pass()
				}
				get(t, f.obj)
				if len(f.fake.Calls) > 1 {
					t.Errorf("calls %v: the move was asked again", f.fake.Calls)
				}
				last := f.obj.Status.LastSwitchover
				want := switchover.Failed
				if after {
					want = switchover.Done
				}
				if last == nil || last.Outcome != want {
					t.Errorf("lastSwitchover %+v, want %s", last, want)
				}
			})
		}
	}
}
