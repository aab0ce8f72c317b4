package realpods

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// requestSwitchover sets the switchover annotation of obj to value, with a
// merge patch: the operator's status writes do not make it conflict.
func requestSwitchover(t *testing.T, c client.Client, obj client.Object, value string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, switchover.Annotation, value)
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// podsNow maps the cluster's pods to their uids and restart counts.
func (r *redisCluster) podsNow() map[string]string {
	r.t.Helper()
	pods := &corev1.PodList{}
	if err := r.c.List(context.Background(), pods, client.InNamespace(r.rec.Namespace), client.MatchingLabels(redisenterprisecluster.Selector(r.rec.Name))); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name] = fmt.Sprintf("%s restarts %d", p.UID, restarts)
	}
	return out
}

// A switchover on demand to a named replica, under the register workload
// (WAIT 1): the status names the replica the primary, no acknowledged
// write is lost, no pod restarts, and the annotation, left in place,
// moves the primary no more.
func TestRedisSwitchoverOnDemand(t *testing.T) {
	c, _, r := startCell(t, "switch", false)
	primary := r.rec.Status.Primary
	target := r.replicas()[len(r.replicas())-1]
	pods := r.podsNow()
	w := r.startWriterWaiting("switch", 1, cellWritePause)
	waitWrites(t, w, 200)

	asked := time.Now()
	requestSwitchover(t, c, r.rec, target)
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		r.refresh()
		last := r.rec.Status.LastSwitchover
		return r.rec.Status.Primary == target && last != nil && last.Outcome == switchover.Done,
			fmt.Sprintf("primary %s, lastSwitchover %+v", r.rec.Status.Primary, last)
	})
	moved := time.Since(asked)
	if got := r.waitRunning(2 * time.Minute); got != target {
		t.Fatalf("Running with the primary %s, want %s", got, target)
	}
	toReady := time.Since(asked)
	waitWrites(t, w, 200)
	// Left in place, the annotation is handled: the primary stays.
	time.Sleep(15 * time.Second)
	r.refresh()
	if r.rec.Status.Primary != target {
		t.Errorf("the primary moved on to %s after the switchover to %s", r.rec.Status.Primary, target)
	}
	waitWrites(t, w, 1)
	h := w.Stop()
	r.checkRunningTakesWrites()
	lost := r.lostWrites(h)
	if lost != 0 {
		t.Errorf("%d acknowledged writes lost in the switchover from %s to %s", lost, primary, target)
	}
	if now := r.podsNow(); !maps.Equal(now, pods) {
		t.Errorf("pods %v after the switchover, want %v: none replaced or restarted", now, pods)
	}
	t.Logf("switchover %s -> %s: recorded done after %v, Running after %v; %d acknowledged (WAIT 1), %d lost, longest gap %v",
		primary, target, moved.Round(time.Millisecond), toReady.Round(time.Millisecond), h.Acked(), lost, w.LongestGap().Round(time.Millisecond))
}

// The etcd leadership moved on demand, to a named member, then to "any":
// status.leader follows, no member pod is replaced, and every key written
// before reads back.
func TestEtcdLeaderMoveOnDemand(t *testing.T) {
	c, e := startEtcdSample(t, "leadermove", etcdVersion)
	keys := writeKeys(t, etcdClientOf(t, c, e), "before-move", 20)
	pods := etcdPodUIDs(t, c, e)
	leader := e.Status.Leader
	var target string
	for _, m := range e.Status.Members {
		if m.Name != leader {
			target = m.Name
		}
	}
	for _, request := range []string{target, switchover.Any} {
		before := e.Status.Leader
		requestSwitchover(t, c, e, request)
		testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), e); err != nil {
				return false, err.Error()
			}
			last := e.Status.LastSwitchover
			ok := last != nil && last.Request == request && last.Outcome == switchover.Done && e.Status.Leader == last.Target && e.Status.Leader != before
			return ok, fmt.Sprintf("leader %s, lastSwitchover %+v", e.Status.Leader, last)
		})
		if request == target && e.Status.Leader != target {
			t.Errorf("leader %s, want %s", e.Status.Leader, target)
		}
		t.Logf("%s=%s: leader %s -> %s", switchover.Annotation, request, before, e.Status.Leader)
		waitEtcdReady(t, c, e, 3, etcdVersion, 2*time.Minute)
	}
	if got := etcdPodUIDs(t, c, e); !maps.Equal(got, pods) {
		t.Errorf("pods %v after the moves, want %v", got, pods)
	}
	checkKeys(t, c, e, keys)
}
