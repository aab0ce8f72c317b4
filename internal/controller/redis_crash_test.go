package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// The operator stops inside a failover, at each of its commands in turn
// (the pass cancelled, as SIGTERM does; the command takes no effect; the
// replicas are repointed at once, so one may still be), and
// a new operator takes over: whatever the command, the cluster ends with
// one primary, the one the status records, every other node its replica,
// and that primary holds every write a replica had acknowledged (its
// offset at least the replicas' highest).
func TestRedisFailoverStoppedAtEachCommand(t *testing.T) {
	for _, silent := range []bool{false, true} {
		for _, killed := range []bool{false, true} {
			t.Run(fmt.Sprintf("the old primary silent %v, the operator killed %v", silent, killed), func(t *testing.T) { failoverStoppedAtEachCommand(t, silent, killed) })
		}
	}
}

// failoverStoppedAtEachCommand is the test above for a failed primary that
// still answers (its pod not ready: it is fenced first), or that is
// silent; the operator stopped (SIGTERM: the pass is cancelled, and what it
// writes to undo its step still lands) or killed (SIGKILL: nothing it
// would write after the command lands).
func failoverStoppedAtEachCommand(t *testing.T, silent, killed bool) {
	nodes := func() map[int]*controller.FakeRedisNode {
		return map[int]*controller.FakeRedisNode{
			0: {Silent: silent, Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
		}
	}
	const acknowledged = 95
	// start brings the fixture to the failover: the primary's pod not
	// ready for the whole window, as the operator that will be stopped saw
	// it, which writes through a client that dead kills.
	start := func(t *testing.T, dead *atomic.Bool) *redisFixture {
		f := newRedisFixture(t, nodes())
		f.r = controller.NewRedisReconciler(killable{Client: k8s, dead: dead}, f.redis, f.clock, failoverWindow)
		f.setPodReady(0, corev1.ConditionFalse)
		f.mustPass()
		f.clock.Step(failoverWindow)
		return f
	}
	whole := start(t, &atomic.Bool{})
	whole.mustPass()
	commands := slices.Clone(whole.redis.Calls)
	if len(commands) < 2 {
		t.Fatalf("the failover sent %v: too few commands to stop between", commands)
	}
	for i := range commands {
		t.Run(fmt.Sprintf("stopped at command %d of %v", i, commands), func(t *testing.T) {
			dead := &atomic.Bool{}
			f := start(t, dead)
			ctx, cancel := context.WithCancel(context.Background())
			f.redis.Crash = func(n int, _ string) bool { return n == i }
			stopped := &atomic.Bool{}
			f.redis.OnCrash = func() { stopped.Store(true); dead.Store(killed); cancel() }
			_, _ = f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
			if !stopped.Load() {
				t.Fatalf("the pass sent %v and was not stopped at its command %d", f.redis.Calls, i)
			}
			cancel()
			f.redis.Crash = nil
			// A new operator, which knows only what the status and the
			// nodes say.
			f.r = controller.NewRedisReconciler(k8s, f.redis, f.clock, failoverWindow)
			for range 8 {
				f.clock.Step(failoverWindow)
				_ = f.pass()
			}
			var primaries []string
			for i := range 3 {
				if n := f.redis.Nodes[nodeAddr(i)]; !n.Silent && n.Info.Primary {
					primaries = append(primaries, redisenterprisecluster.PodName("r", i))
				}
			}
			if len(primaries) != 1 || primaries[0] != f.obj.Status.Primary {
				t.Fatalf("primaries %v, status.primary %s; want one, the recorded one (calls %v)", primaries, f.obj.Status.Primary, f.redis.Calls)
			}
			for i := range 3 {
				n := f.redis.Nodes[nodeAddr(i)].Info
				name := redisenterprisecluster.PodName("r", i)
				if f.redis.Nodes[nodeAddr(i)].Silent {
					continue
				}
				if name == primaries[0] {
					if n.Offset < acknowledged {
						t.Errorf("primary %s at offset %d: writes up to %d, acknowledged by a replica, are lost", name, n.Offset, acknowledged)
					}
					continue
				}
				if !strings.HasPrefix(n.PrimaryHost, primaries[0]+".") {
					t.Errorf("%s follows %q, want %s", name, n.PrimaryHost, primaries[0])
				}
			}
		})
	}
}

// killable is a client that writes nothing once dead: the operator's
// process killed.
type killable struct {
	client.Client
	dead *atomic.Bool
}

var errKilled = errors.New("the operator was killed")

func (k killable) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Client.Patch(ctx, obj, patch, opts...)
}

func (k killable) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Client.Update(ctx, obj, opts...)
}

func (k killable) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Client.Delete(ctx, obj, opts...)
}

func (k killable) Status() client.SubResourceWriter {
	return killableStatus{SubResourceWriter: k.Client.Status(), dead: k.dead}
}

type killableStatus struct {
	client.SubResourceWriter
	dead *atomic.Bool
}

func (s killableStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func (s killableStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}
