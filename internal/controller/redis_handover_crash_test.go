package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// handoverCase brings a fixture to the pass that hands its primary, r-0,
// over to a replica.
type handoverCase struct {
	name  string
	start func(t *testing.T) *redisFixture
}

// handoverNodes are a primary and two synced replicas, r-1 as far along
// as the primary and r-2 one write behind.
func handoverNodes() map[int]*controller.FakeRedisNode {
	return map[int]*controller.FakeRedisNode{0: primaryOf(100), 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 99, true)}
}

var handoverCases = []handoverCase{
	{"a rolling update", func(t *testing.T) *redisFixture {
		f := newRedisFixture(t, handoverNodes())
		f.mustPass()
		f.rollAllButThePrimary()
		return f
	}},
	{"a cordoned primary", func(t *testing.T) *redisFixture {
		f := newRedisFixture(t, handoverNodes())
		cordon := f.nodes()
		f.mustPass()
		f.settle()
		cordon(0)
		return f
	}},
	{"a switchover on demand", func(t *testing.T) *redisFixture {
		f := newRedisFixture(t, handoverNodes())
		f.mustPass()
		f.settle()
		f.annotate("r-1")
		return f
	}},
	{"a rolling update to TLS", func(t *testing.T) *redisFixture {
		nodes := handoverNodes()
		nodes[0].Info.ReplicaPorts = map[string]int{podIP(1): 0, podIP(2): 0}
		f := newRedisFixture(t, nodes)
		f.serveTLS(1, 2)
		f.mustPass()
		f.rollAllButThePrimary()
		return f
	}},
}

// The operator stops inside a handover, at each of its commands in turn,
// before the command takes effect or right after (SIGTERM: the pass
// cancelled, what it writes to undo still lands; or SIGKILL: nothing it
// would write lands), and a new operator takes over: the cluster ends
// with one primary, the one the status records and its pod's label names,
// every other node its replica, and no write lost (the primary's offset
// at least every other node's).
func TestRedisHandoverStoppedAtEachCommand(t *testing.T) {
	for _, c := range handoverCases {
		t.Run(c.name, func(t *testing.T) {
			whole := c.start(t)
			whole.mustPass()
			commands := slices.Clone(whole.redis.Calls)
			if len(whole.redis.CallsMatching("failover")) != 1 {
				t.Fatalf("the pass sent %v: no handover", commands)
			}
			for i := range commands {
				for _, after := range []bool{false, true} {
					for _, killed := range []bool{false, true} {
						name := fmt.Sprintf("stopped %s command %d of %v, killed %v", map[bool]string{false: "before", true: "after"}[after], i, commands, killed)
						t.Run(name, func(t *testing.T) { handoverStoppedAt(t, c, i, after, killed) })
					}
				}
			}
		})
	}
}

func handoverStoppedAt(t *testing.T, c handoverCase, i int, after, killed bool) {
	f := c.start(t)
	dead := &atomic.Bool{}
	f.r = controller.NewRedisReconciler(killable{Client: k8s, dead: dead}, f.redis, f.clock, failoverWindow)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.redis.Crash = func(n int, _ string) bool { return n == i }
	f.redis.CrashAfter = after
	stopped := &atomic.Bool{}
	f.redis.OnCrash = func() { stopped.Store(true); dead.Store(killed); cancel() }
	_, _ = f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	if !stopped.Load() {
		t.Fatalf("the pass sent %v and was not stopped at its command %d", f.redis.Calls, i)
	}
	f.redis.Crash = nil
	// Stopped, the operator leaves a status that names the primary the
	// nodes show, where one node alone is one.
	get(t, f.obj)
	if now := redisPrimaries(f); !killed && len(now) == 1 && redisenterprisecluster.PodName("r", now[0]) != f.obj.Status.Primary {
		t.Errorf("after the stop, status.primary %s while r-%d alone is a primary (calls %v)", f.obj.Status.Primary, now[0], f.redis.Calls)
	}
	// A new operator, which knows only what the status and the nodes say.
	f.r = controller.NewRedisReconciler(k8s, f.redis, f.clock, failoverWindow)
	handoversBefore := len(f.redis.CallsMatching("failover"))
	for range 8 {
		f.clock.Step(failoverWindow)
		_ = f.pass()
	}
	// A switchover on demand was recorded as handled before its first
	// command: the new operator does not take it again, and settles its
	// outcome.
	if last := f.obj.Status.LastSwitchover; last != nil {
		if n := len(f.redis.CallsMatching("failover")); n != handoversBefore {
			t.Errorf("the new operator sent FAILOVER again for the request handled (calls %v)", f.redis.Calls)
		}
		if last.Outcome == switchover.InProgress {
			t.Errorf("lastSwitchover left %+v", last)
		}
	}
	primaries := redisPrimaries(f)
	if len(primaries) != 1 || redisenterprisecluster.PodName("r", primaries[0]) != f.obj.Status.Primary {
		t.Fatalf("primaries %v, status.primary %s; want one, the recorded one (calls %v)", primaries, f.obj.Status.Primary, f.redis.Calls)
	}
	p := primaries[0]
	primary := f.redis.Nodes[nodeAddr(p)].Info
	if primary.Offset < 100 {
		t.Errorf("the primary r-%d at offset %d: writes up to 100, acknowledged by the old primary, are lost", p, primary.Offset)
	}
	for n := range 3 {
		info := f.redis.Nodes[nodeAddr(n)].Info
		name := redisenterprisecluster.PodName("r", n)
		role := redisv1alpha1.RoleReplica
		if n == p {
			role = redisv1alpha1.RolePrimary
		}
		if got := f.roleLabel(n); got != role {
			t.Errorf("pod %s labelled %q, want %q (calls %v)", name, got, role, f.redis.Calls)
		}
		for _, s := range f.obj.Status.Nodes {
			if s.Name == name && s.Role != role {
				t.Errorf("status.nodes says %s is a %s, want %s", name, s.Role, role)
			}
		}
		if info.Offset > primary.Offset {
			t.Errorf("the primary r-%d at offset %d, %s at %d: writes it holds are lost", p, primary.Offset, name, info.Offset)
		}
		if n != p && !strings.HasPrefix(info.PrimaryHost, redisenterprisecluster.PodName("r", p)+".") && info.PrimaryHost != podIP(p) {
			t.Errorf("%s follows %q, want r-%d", name, info.PrimaryHost, p)
		}
	}
}

// redisPrimaries are the ordinals of the nodes that answer as primaries.
func redisPrimaries(f *redisFixture) []int {
	var out []int
	for n := range 3 {
		if node := f.redis.Nodes[nodeAddr(n)]; !node.Silent && node.Info.Primary {
			out = append(out, n)
		}
	}
	return out
}
