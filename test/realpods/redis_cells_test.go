package realpods

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// cutPodFrom drops, inside the network namespace of the pod name, every
// packet to and from each of ips: the pod and those addresses no longer
// reach each other, while everything else (the clients and the operator on
// this machine, the kubelet's probes) still reaches the pod. It returns
// the function that heals the cut (also called when the test ends).
func cutPodFrom(t *testing.T, c client.Client, namespace, name string, ips ...string) (heal func()) {
	t.Helper()
	pids := podProcesses(t, c, namespace, name)
	if len(pids) == 0 {
		t.Fatalf("no process of pod %s found", name)
	}
	// Hold the namespace itself open, not a pid that may be reused: the
	// rules go where they were put, and their removal fails harmlessly if
	// the pod is gone.
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pids[0]))
	if err != nil {
		t.Fatalf("open the network namespace of pod %s: %v", name, err)
	}
	rules := make([][]string, 0, 2*len(ips))
	for _, ip := range ips {
		rules = append(rules, []string{"INPUT", "-s", ip, "-j", "DROP"}, []string{"OUTPUT", "-d", ip, "-j", "DROP"})
	}
	iptables := func(op string, rule []string) ([]byte, error) {
		cmd := exec.Command("nsenter", append([]string{"--net=/proc/self/fd/3", "iptables", "-w", op}, rule...)...)
		cmd.ExtraFiles = []*os.File{netns}
		return cmd.CombinedOutput()
	}
	for _, rule := range rules {
		if out, err := iptables("-I", rule); err != nil {
			t.Fatalf("cut pod %s off from %v: %v\n%s", name, ips, err, out)
		}
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			for _, rule := range rules {
				if out, err := iptables("-D", rule); err != nil {
					t.Logf("heal the cut of pod %s from %v: %v\n%s", name, ips, err, out)
				}
			}
			netns.Close()
		})
	}
	t.Cleanup(heal)
	return heal
}

// readyReasons samples the cluster's Ready reason every half second for d
// and returns the reasons in the order seen (each run of one reason once).
// It fails the test if the recorded primary moves from primary meanwhile.
func (r *redisCluster) readyReasons(d time.Duration, primary string) []string {
	r.t.Helper()
	var seen []string
	for start := time.Now(); time.Since(start) < d; time.Sleep(500 * time.Millisecond) {
		r.refresh()
		if r.rec.Status.Primary != primary {
			r.t.Errorf("the primary moved from %s to %s", primary, r.rec.Status.Primary)
			primary = r.rec.Status.Primary
		}
		if cond := meta.FindStatusCondition(r.rec.Status.Conditions, conditions.Ready); cond != nil &&
			(len(seen) == 0 || seen[len(seen)-1] != cond.Reason) {
			seen = append(seen, cond.Reason)
		}
	}
	return seen
}

// checkSaysSo checks that reasons (as readyReasons returns them) hold want
// and, once want was seen, never Available again: the status said what
// was wrong and kept saying it until the fault ended. The operator looks
// at a running cluster every 10 s, so reasons may start with Available.
func checkSaysSo(t *testing.T, reasons []string, want string) {
	t.Helper()
	i := slices.Index(reasons, want)
	if i < 0 {
		t.Errorf("Ready reasons during the fault: %v; want %s", reasons, want)
		return
	}
	if slices.Contains(reasons[i:], conditions.ReasonAvailable) {
		t.Errorf("Ready reasons during the fault: %v; Available again after %s, with the fault still there", reasons, want)
	}
}

// primaryWatch asks every node of a cluster, five times a second, whether
// it is a primary that takes writes: role:master with at least one replica
// within min-replicas-max-lag (without one, the node refuses writes). It
// notes every look at which two nodes are.
type primaryWatch struct {
	stop, done chan struct{}
	mu         sync.Mutex
	two        []string
}

func (r *redisCluster) watchPrimaries() *primaryWatch {
	pw := &primaryWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pw.done)
		for {
			select {
			case <-pw.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			pods := &corev1.PodList{}
			if err := r.c.List(context.Background(), pods, client.InNamespace(r.rec.Namespace), client.MatchingLabels(redisenterprisecluster.Selector(r.rec.Name))); err != nil {
				continue
			}
			var mu sync.Mutex
			var writable []string
			var wg sync.WaitGroup
			for _, p := range pods.Items {
				if p.Status.PodIP == "" {
					continue
				}
				wg.Go(func() {
					if primaryTakingWrites(p.Status.PodIP, r.password) {
						mu.Lock()
						writable = append(writable, p.Name)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(writable) > 1 {
				pw.mu.Lock()
				pw.two = append(pw.two, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), writable))
				pw.mu.Unlock()
			}
		}
	}()
	return pw
}

// primaryTakingWrites reports whether the node at ip says it is a primary
// with a replica close enough for it to take writes.
func primaryTakingWrites(ip, password string) bool {
	c := redisClient(ip, "", password)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return false
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	good, _ := strconv.Atoi(fields["min_slaves_good_slaves"])
	return fields["role"] == "master" && good > 0
}

// Stop ends the watch; it returns the looks at which two nodes were
// primaries taking writes.
func (pw *primaryWatch) Stop() []string {
	close(pw.stop)
	<-pw.done
	return pw.two
}

// readyEventReasons returns the reasons of the Ready transitions recorded
// as events of the cluster.
func (r *redisCluster) readyEventReasons() []string {
	r.t.Helper()
	events := &eventsv1.EventList{}
	if err := r.c.List(context.Background(), events, client.InNamespace(r.rec.Namespace)); err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "RedisEnterpriseCluster" && e.Regarding.Name == r.rec.Name {
			out = append(out, e.Reason)
		}
	}
	return out
}

// ordinal returns the ordinal of a node's pod name.
func ordinal(pod string) int {
	n, _ := strconv.Atoi(pod[strings.LastIndex(pod, "-")+1:])
	return n
}

// The primary cut off from its replicas, not from its clients or the
// operator, for 20 s (its packets to and from the replicas dropped inside
// its pod). One replica cut off: writes that wait for one replica are
// still acknowledged through the other, and the status says a replica is
// behind rather than every replica in sync. Every replica cut off: no
// write is acknowledged, the status says no replica is in sync, and
// nothing fails over, since the operator reaches a primary that answers as
// one. After the heal the replicas catch up, the status is Running with
// the same primary, and no acknowledged write is lost.
func TestRedisFaultPrimaryCutOffFromItsReplicas(t *testing.T) {
	c, _, r := startCell(t, "peers", false)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary
	replicas := r.replicas()
	const cutFor = 20 * time.Second
	in := func(t *testing.T) *redisCluster { sub := *r; sub.t = t; return &sub }

	t.Run("one replica cut off from the primary", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("one", 1, cellWritePause)
		waitWrites(t, w, 200)
		heal := cutPodFrom(t, c, ns, primary, r.podIP(replicas[0]))
		before := w.Acked()
		reasons := r.readyReasons(cutFor, primary)
		during := w.Acked() - before
		heal()
		healed := time.Now()
		if during == 0 {
			t.Errorf("no write acknowledged with %s alone cut off: the other replica should acknowledge them", replicas[0])
		}
		checkSaysSo(t, reasons, redisv1alpha1.ReasonReplicaBehind)
		if got := r.waitRunning(2 * time.Minute); got != primary {
			t.Errorf("primary %s after the cut, want %s kept", got, primary)
		}
		toReady := time.Since(healed)
		acked, lost := r.finish(w, "one replica cut off from the primary for 20 s", toReady)
		t.Logf("%s cut off from %s for %v: %d writes acknowledged meanwhile; Ready reasons %v; Running %v after the heal; %d acknowledged (WAIT 1), %d lost, longest gap %v",
			replicas[0], primary, cutFor, during, reasons, toReady.Round(time.Millisecond), acked, lost, w.LongestGap().Round(time.Millisecond))
	})

	t.Run("the primary cut off from every replica", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("all", 1, cellWritePause)
		waitWrites(t, w, 200)
		heal := cutPodFrom(t, c, ns, primary, r.podIP(replicas[0]), r.podIP(replicas[1]))
		// A write in flight as the cut starts may still be acknowledged:
		// count from the first write that fails.
		waitWriteFails(t, w)
		before := w.Acked()
		reasons := r.readyReasons(cutFor-3*time.Second, primary)
		during := w.Acked() - before
		heal()
		healed := time.Now()
		if during > 0 {
			t.Errorf("%d writes acknowledged by WAIT 1 with the primary cut off from every replica", during)
		}
		checkSaysSo(t, reasons, redisv1alpha1.ReasonNoReplicaInSync)
		if got := r.waitRunning(2 * time.Minute); got != primary {
			t.Errorf("primary %s after the cut, want %s kept", got, primary)
		}
		toReady := time.Since(healed)
		acked, lost := r.finish(w, "the primary cut off from every replica for 20 s", toReady)
		t.Logf("%s cut off from %v for %v: Ready reasons %v; Running %v after the heal; %d acknowledged (WAIT 1), %d lost, longest gap %v",
			primary, replicas, cutFor, reasons, toReady.Round(time.Millisecond), acked, lost, w.LongestGap().Round(time.Millisecond))
	})
}

// busyScript loops, reading the clock and writing nothing, for ARGV[1]
// seconds: a read-only script, which SCRIPT KILL may stop.
const busyScript = `
local t0 = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) >= tonumber(ARGV[1]) * 1000000 then break end
end
return 1`

// busyFor is how long the script would run: longer than Redis's busy
// threshold (5 s, after which it answers other clients BUSY), the cells'
// failover window (5 s) and the 10 s between two looks of the operator at
// a running cluster.
const busyFor = 15 * time.Second

// A read-only script that loops on the primary for longer than the busy
// threshold and the failover window: the primary answers every other
// client, the operator included, BUSY, and stops pinging its replicas.
// The operator kills the script (SCRIPT KILL, as Sentinel does), saying
// PrimaryBusy meanwhile, and the primary stays; or, if the failover window
// ran out first, it fails over, its fence killing the script so as to make
// the old primary a replica. Either way no two nodes take writes at once
// and no acknowledged write is lost.
func TestRedisFaultPrimaryBusyWithAScript(t *testing.T) {
	_, _, r := startCell(t, "busy", false)
	primary := r.rec.Status.Primary
	w := r.startWriterWaiting("busy", 1, cellWritePause)
	waitWrites(t, w, 200)
	watch := r.watchPrimaries()

	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(r.podIP(primary), strconv.Itoa(redisenterprisecluster.Port)), Password: r.password,
		Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: 2 * busyFor})
	defer rc.Close()
	started := time.Now()
	err := rc.Eval(context.Background(), busyScript, nil, int(busyFor.Seconds())).Err()
	ran := time.Since(started)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the script ran %v and ended with %v; want it killed", ran.Round(time.Millisecond), err)
	}
	after := time.Now()
	got := r.waitRunning(2 * time.Minute)
	toReady := time.Since(after)
	if got != primary {
		info, err := r.replication(primary)
		if err != nil || info["role"] != "slave" || !strings.HasPrefix(info["master_host"], got+".") {
			t.Errorf("the old primary %s after the script: role %s of %s (%v); want a replica of %s", primary, info["role"], info["master_host"], err, got)
		}
	}
	if got == primary {
		// Killed by the step that says so. (An operator that first saw
		// the primary silent, before Redis answered BUSY, may have
		// reached the failover window first: then the fence killed it.)
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			reasons := r.readyEventReasons()
			return slices.Contains(reasons, redisv1alpha1.ReasonPrimaryBusy), fmt.Sprintf("Ready transitions recorded: %v", reasons)
		})
	}
	acked, lost := r.finish(w, fmt.Sprintf("a read-only script looping on the primary (for up to %v)", busyFor), toReady)
	if two := watch.Stop(); len(two) > 0 {
		t.Errorf("two primaries taking writes at once: %v", two)
	}
	t.Logf("the script on %s ran %v (%v); primary %s after it; Ready transitions %v; Running %v after the script; %d acknowledged (WAIT 1), %d lost, longest gap %v",
		primary, ran.Round(time.Millisecond), err, got, r.readyEventReasons(), toReady.Round(time.Millisecond), acked, lost, w.LongestGap().Round(time.Millisecond))
}

// A five-node cluster whose primary is at ordinal 3 or 4, scaled to three
// nodes under writes: the primary is handed over to a node that stays
// before its pod goes, no two nodes take writes at once, no acknowledged
// write is lost, and the cluster runs with three nodes.
func TestRedisFaultScaleInBelowThePrimary(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	r := newRedisCell(t, c, ns, "shrink", false, 5)
	ctx, primary := context.Background(), r.rec.Status.Primary
	// The writes while the primary is moved, checked at the end with the
	// others; the cell's figures are those of the scale-in alone.
	setup := r.startWriterWaiting("move", 1, cellWritePause)
	waitWrites(t, setup, 200)

	if ordinal(primary) < 3 {
		// The failover promotes the replica furthest along: cut the
		// replicas below ordinal 3 off from the primary, so that only
		// those at 3 and 4 take the next writes, then freeze the primary.
		var low []string
		for _, n := range r.rec.Status.Nodes {
			if n.Name != primary && ordinal(n.Name) < 3 {
				low = append(low, r.podIP(n.Name))
			}
		}
		heal := cutPodFrom(t, c, ns, primary, low...)
		waitWrites(t, setup, 100)
		freezePod(t, c, ns, primary)
		testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
			r.refresh()
			return r.rec.Status.Primary != primary, "the primary is still " + r.rec.Status.Primary
		})
		heal()
		thawPod(t, c, ns, primary)
		primary = r.waitRunning(3 * time.Minute)
		if ordinal(primary) < 3 {
			t.Fatalf("the primary moved to %s, not to a node at ordinal 3 or 4: the scale-in would not be below it", primary)
		}
		waitWrites(t, setup, 100)
	}
	setupHistory := setup.Stop()
	w := r.startWriterWaiting("shrink", 1, cellWritePause)
	waitWrites(t, w, 200)

	watch := r.watchPrimaries()
	r.refresh()
	r.rec.Spec.Nodes = 3
	if err := c.Update(ctx, r.rec); err != nil {
		t.Fatal(err)
	}
	scaled, generation := time.Now(), r.rec.Generation
	// When the recorded primary left the old primary, and when its pod
	// started going.
	var moved, going time.Duration
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		r.refresh()
		if moved == 0 && r.rec.Status.Primary != primary {
			moved = time.Since(scaled)
		}
		pod := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: primary}, pod)
		if going == 0 && (err != nil || pod.DeletionTimestamp != nil) {
			going = time.Since(scaled)
		}
		ready := meta.IsStatusConditionTrue(r.rec.Status.Conditions, conditions.Ready)
		return going > 0 && ready && r.rec.Status.ObservedGeneration >= generation,
			fmt.Sprintf("primary %s (moved after %v), old primary's pod going after %v, Ready %v", r.rec.Status.Primary, moved, going, ready)
	})
	got := r.waitRunning(3 * time.Minute)
	toReady := time.Since(scaled)
	if moved == 0 || moved > going {
		t.Errorf("the primary moved from %s after %v, its pod started going after %v: want the handover first", primary, moved, going)
	}
	if ordinal(got) >= 3 {
		t.Errorf("primary %s after the scale-in to 3 nodes", got)
	}
	acked, lost := r.finish(w, "scaled in from 5 nodes to 3, the primary at ordinal 3 or 4", toReady)
	if n := r.lostWrites(setupHistory); n > 0 {
		t.Errorf("writes acknowledged while the primary was moved (%d) are lost on %d of %d keys", setupHistory.Acked(), n, len(setupHistory.Keys))
	}
	if two := watch.Stop(); len(two) > 0 {
		t.Errorf("two primaries taking writes at once: %v", two)
	}
	t.Logf("scaled in with the primary at %s: %s primary %v after, the old primary's pod going %v after; Running %v after the scale-in; %d acknowledged (WAIT 1), %d lost, longest gap %v",
		primary, got, moved.Round(time.Millisecond), going.Round(time.Millisecond), toReady.Round(time.Millisecond), acked, lost, w.LongestGap().Round(time.Millisecond))
}
