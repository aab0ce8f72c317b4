package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/controller"
)

// switchoverFixture is a running cluster, r-0 its primary and r-1, r-2
// replicas in sync, whose StatefulSet is settled, with its events kept.
func switchoverFixture(t *testing.T) (*redisFixture, *events.FakeRecorder) {
	t.Helper()
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primaryOf(100), 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	recorder := events.NewFakeRecorder(100)
	f.r = controller.NewObservedRedisReconciler(k8s, f.redis, f.clock, failoverWindow, prometheus.NewRegistry(), recorder)
	f.mustPass()
	f.settle()
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || len(f.redis.Calls) != 0 {
		t.Fatalf("primary %s, calls %v before the request", f.obj.Status.Primary, f.redis.Calls)
	}
	return f, recorder
}

// annotate sets the switchover annotation to value.
func (f *redisFixture) annotate(value string) {
	f.t.Helper()
	get(f.t, f.obj)
	if f.obj.Annotations == nil {
		f.obj.Annotations = map[string]string{}
	}
	f.obj.Annotations[switchover.Annotation] = value
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		f.t.Fatal(err)
	}
}

// A switchover on demand is the roll's handover (FAILOVER TO the replica
// named, the other replica pointed at it), taken once: the request is
// recorded in status.lastSwitchover, and the annotation, still set (as a
// GitOps tool keeps it), moves nothing again and writes nothing. A new
// value asks again.
func TestRedisSwitchoverOnDemandHandsOverOnce(t *testing.T) {
	f, recorder := switchoverFixture(t)
	f.annotate("r-2")
	f.mustPass()
	want := []string{"failover " + nodeAddr(0) + " " + nodeAddr(2), "follow " + nodeAddr(1) + " r-2.r-nodes"}
	if !slices.Equal(f.redis.Calls, want) {
		t.Fatalf("calls %v, want %v", f.redis.Calls, want)
	}
	if f.obj.Status.Primary != "r-2" || f.roleLabel(2) != "primary" || f.roleLabel(0) != "replica" {
		t.Errorf("primary %s, labels r-0 %s, r-2 %s; want r-2", f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(2))
	}
	last := f.obj.Status.LastSwitchover
	if last == nil || last.Request != "r-2" || last.Target != "r-2" || last.Outcome != switchover.Done {
		t.Fatalf("lastSwitchover %+v, want r-2 done", last)
	}
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, switchover.ConditionType); c == nil || c.Status != "True" || c.Reason != switchover.Done {
		t.Errorf("Switchover condition %+v", c)
	}
	// The new primary hears from both replicas; the old primary follows it.
	f.redis.Nodes[nodeAddr(2)].Info.ReplicaLag = map[string]time.Duration{podIP(0): 0, podIP(1): 0}
	f.redis.Nodes[nodeAddr(2)].Info.ReplicaPorts = map[string]int{podIP(0): 6379, podIP(1): 6379}
	f.mustPass()
	f.mustPass()
	calls, version := len(f.redis.Calls), f.obj.ResourceVersion
	for range 3 {
		f.mustPass()
	}
	if len(f.redis.Calls) != calls || f.obj.ResourceVersion != version {
		t.Errorf("at rest, with the annotation handled: calls %v, resourceVersion %s -> %s", f.redis.Calls[calls:], version, f.obj.ResourceVersion)
	}
	if f.obj.Status.Primary != "r-2" {
		t.Errorf("primary %s, want r-2", f.obj.Status.Primary)
	}
	if !sawEvent(recorder, "PrimaryHandedOver") {
		t.Error("no PrimaryHandedOver event")
	}
	// Asked again, with a request ID: back to r-0.
	f.annotate("r-0/2")
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || f.obj.Status.LastSwitchover.Request != "r-0/2" {
		t.Errorf("primary %s, lastSwitchover %+v after r-0/2", f.obj.Status.Primary, f.obj.Status.LastSwitchover)
	}
	f.wantPrimaryHistory(redisv1alpha1.PrimaryChange{From: "r-2", To: "r-0", Reason: redisv1alpha1.PrimaryChangeSwitchover},
		redisv1alpha1.PrimaryChange{From: "r-0", To: "r-2", Reason: redisv1alpha1.PrimaryChangeSwitchover})
}

// A request for a replica that is behind, for the primary itself, or for
// a node that is not one is refused: nothing is sent to Redis, the
// Switchover condition and a Warning event name the annotation, the
// target and why, and the refusal is recorded, once.
func TestRedisSwitchoverRefusedNamesTheTargetAndWhy(t *testing.T) {
	f, recorder := switchoverFixture(t)
	f.redis.Nodes[nodeAddr(0)].Info.ReplicaLag[podIP(2)] = 20 * time.Second
	for _, c := range []struct{ target, why string }{{"r-2", switchover.Behind}, {"r-0", switchover.AlreadyPrimary}, {"r-5", switchover.NotAMember}} {
		f.annotate(c.target)
		f.mustPass()
		if len(f.redis.CallsMatching("failover")) != 0 || f.obj.Status.Primary != "r-0" {
			t.Fatalf("%s: calls %v, primary %s", c.target, f.redis.Calls, f.obj.Status.Primary)
		}
		cond := meta.FindStatusCondition(f.obj.Status.Conditions, switchover.ConditionType)
		if cond == nil || cond.Status != "False" || cond.Reason != switchover.Refused ||
			!strings.Contains(cond.Message, switchover.Annotation) || !strings.Contains(cond.Message, c.target) || !strings.Contains(cond.Message, c.why) {
			t.Errorf("%s: Switchover condition %+v, want refused naming %s and %q", c.target, cond, c.target, c.why)
		}
		if last := f.obj.Status.LastSwitchover; last == nil || last.Request != c.target || last.Outcome != switchover.Refused {
			t.Errorf("%s: lastSwitchover %+v", c.target, last)
		}
		if !sawEvent(recorder, switchover.Refused) {
			t.Errorf("%s: no %s event", c.target, switchover.Refused)
		}
		version := f.obj.ResourceVersion
		f.mustPass()
		if f.obj.ResourceVersion != version || sawEvent(recorder, switchover.Refused) {
			t.Errorf("%s: the refusal was written or told again", c.target)
		}
	}
}

// sawEvent drains recorder and reports whether an event of reason was in it.
func sawEvent(recorder *events.FakeRecorder, reason string) bool {
	found := false
	for {
		select {
		case e := <-recorder.Events:
			found = found || strings.Contains(e, " "+reason+" ")
		default:
			return found
		}
	}
}
