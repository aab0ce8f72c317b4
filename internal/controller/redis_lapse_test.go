package controller_test

import (
	"slices"
	"testing"
	"time"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// A replica of a Running cluster that misses one look (its answer slow on
// a loaded machine) does not move the status: no write, Ready unchanged.
// Missed by a second look a second later, the status says so.
func TestRedisALapseSeenByOneLookLeavesTheStatusAlone(t *testing.T) {
	f := newRedisFixture(t, runningNodes())
	f.run()
	before := f.obj.ResourceVersion

	f.redis.Nodes[nodeAddr(2)].Silent = true
	f.mustPass()
	if f.obj.ResourceVersion != before || f.obj.Status.State != redisv1alpha1.StateRunning || f.readyReason() != conditions.ReasonAvailable {
		t.Fatalf("one look at r-2 silent: resourceVersion %s -> %s, state %s, Ready %s; want the status unwritten, Running, %s",
			before, f.obj.ResourceVersion, f.obj.Status.State, f.readyReason(), conditions.ReasonAvailable)
	}
	f.redis.Nodes[nodeAddr(2)].Silent = false
	f.clock.Step(time.Second)
	f.mustPass()
	if f.obj.ResourceVersion != before {
		t.Fatalf("r-2 answering again at the next look: resourceVersion %s -> %s, want the status unwritten", before, f.obj.ResourceVersion)
	}

	// Silent again: a new lapse, held for one look, then reported.
	f.redis.Nodes[nodeAddr(2)].Silent = true
	f.clock.Step(time.Second)
	f.mustPass()
	if f.obj.ResourceVersion != before {
		t.Fatalf("r-2 silent again, first look: resourceVersion %s -> %s, want the status unwritten", before, f.obj.ResourceVersion)
	}
	f.clock.Step(time.Second)
	f.mustPass()
	if f.obj.Status.State == redisv1alpha1.StateRunning || f.readyReason() == conditions.ReasonAvailable {
		t.Errorf("r-2 silent at two looks a second apart: state %s, Ready %s; want neither Running nor %s", f.obj.Status.State, f.readyReason(), conditions.ReasonAvailable)
	}
	for _, n := range f.obj.Status.Nodes {
		if want := n.Name != "r-2"; n.Healthy != want {
			t.Errorf("node %s healthy %v, want %v", n.Name, n.Healthy, want)
		}
	}
}

// A step is never held: a Running cluster's primary found BUSY by one
// look is sent SCRIPT KILL at that look, and the status says why.
func TestRedisALapseThatAsksForAStepIsNotHeld(t *testing.T) {
	f := newRedisFixture(t, runningNodes())
	f.run()
	f.redis.Nodes[nodeAddr(0)].Busy = true
	f.mustPass()
	if got := f.redis.CallsMatching("killscript"); !slices.Equal(got, []string{"killscript " + nodeAddr(0)}) {
		t.Fatalf("calls %v, want SCRIPT KILL sent to r-0 at the first look", f.redis.Calls)
	}
	if f.readyReason() != redisv1alpha1.ReasonPrimaryBusy {
		t.Errorf("Ready reason %s, want %s", f.readyReason(), redisv1alpha1.ReasonPrimaryBusy)
	}
}
