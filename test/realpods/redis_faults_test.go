package realpods

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
	"github.com/app-operator/app-operator/test/workload"
)

// The Redis cells of the fault matrix. Each runs a small three-node cluster
// in its own namespace while a client runs the register workload (package
// workload: SET, DEL and INCR on a few dozen keys, each op acknowledged
// only when WAIT says replicas hold it), and breaks one thing in a way
// where what the operator sees differs from what the clients see. At the
// end the value of every key, on the one final primary and on every
// replica, must be one that a history of the client's ops allows (every
// acknowledged op applied, any of the unknown ones), and a status that
// says Running must mean a primary that takes writes.

// cellFailoverAfter is the failover window of the cells' operators: the
// shortest the flag takes, so that a cell shows the window is what holds a
// failover back, not time.
const cellFailoverAfter = controller.MinRedisFailoverAfter

// cellWritePause spaces a cell's writes, so three cells writing at once
// leave the machine's two cores to the nodes and the operators.
const cellWritePause = 2 * time.Millisecond

// newRedisCell creates a RedisEnterpriseCluster of nodes nodes called name
// in ns, with persistence on or off, and waits for it to run. Its requests
// are small, so the cells fit on the node beside every other test's pods.
func newRedisCell(t *testing.T, c client.Client, ns, name string, persistent bool, nodes int) *redisCluster {
	t.Helper()
	return newRedisCellWith(t, c, ns, name, persistent, nodes, "")
}

// newRedisCellWith is newRedisCell with further lines of the spec.
func newRedisCellWith(t *testing.T, c client.Client, ns, name string, persistent bool, nodes int, spec string) *redisCluster {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: app.redislabs.com/v1alpha1
kind: RedisEnterpriseCluster
metadata: {name: %s, namespace: %s}
spec:
  nodes: %d
  redisEnterpriseNodeResources:
    limits: {cpu: 500m, memory: 256Mi}
    requests: {cpu: 10m, memory: 32Mi}
`, name, ns, nodes)
	if persistent {
		doc += "  persistentSpec: {enabled: true, storageClassName: standard, volumeSize: 1Gi}\n"
	}
	doc += spec
	obj := &redisv1alpha1.RedisEnterpriseCluster{}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	r := &redisCluster{t: t, c: c, rec: obj}
	r.waitRunning(redisReadyTimeout)
	r.readPassword()
	return r
}

// readPassword reads the cluster's password from its Secret.
func (r *redisCluster) readPassword() {
	r.t.Helper()
	secret := &corev1.Secret{}
	if err := r.c.Get(context.Background(), client.ObjectKeyFromObject(r.rec), secret); err != nil {
		r.t.Fatal(err)
	}
	r.password = string(secret.Data[redisenterprisecluster.SecretPassword])
}

// cellOperatorOptions are the options of a cell's operator, run in the
// test's process and watching the cell's namespace alone.
// startOperator starts the operator in the test's process against the
// cluster, with the operator's image, as built here, for its tools (the
// backups' Jobs and the Redis nodes' init containers run them).
func startOperator(t *testing.T, opts testenv.StartOptions) *testenv.Operator {
	t.Helper()
	if opts.SnapshotImage == "" {
		opts.SnapshotImage = operatorImage(t)
	}
	return testenv.StartOperator(t, testCluster.Config(), opts)
}

func cellOperatorOptions(ns string) testenv.StartOptions {
	return testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{RedisFailoverAfter: cellFailoverAfter}}
}

// startCell starts a cell in a namespace of its own: its operator, in the
// test's process, and a running cluster called name.
func startCell(t *testing.T, name string, persistent bool) (client.Client, *testenv.Operator, *redisCluster) {
	t.Helper()
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	op := startOperator(t, cellOperatorOptions(ns))
	return c, op, newRedisCell(t, c, ns, name, persistent, 3)
}

// waitWrites waits for the writer to have n more acknowledged writes.
func waitWrites(t *testing.T, w *workload.Register, n int) {
	t.Helper()
	before := w.Acked()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		return w.Acked() >= before+n, fmt.Sprintf("%d of %d writes acknowledged (last error: %s)", w.Acked()-before, n, w.LastError())
	})
}

// waitWriteFails waits for a write of w to fail. The writes go one at a
// time: by then the write in flight when it was called has ended, and a
// later one is sent after the call.
func waitWriteFails(t *testing.T, w *workload.Register) {
	t.Helper()
	before := w.Errors()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		return w.Errors() > before, fmt.Sprintf("no write failed yet; %d acknowledged", w.Acked())
	})
}

// checkRunningTakesWrites checks what a Running status claims: one node is
// a primary, the recorded one, every other node is its replica with its
// link up (by the primary's name, or, for an old primary that handed
// over, by its address), and a write reaches every replica.
func (r *redisCluster) checkRunningTakesWrites() {
	r.t.Helper()
	r.refresh()
	primary := r.rec.Status.Primary
	for _, n := range r.rec.Status.Nodes {
		info, err := r.replication(n.Name)
		if err != nil {
			r.t.Errorf("Running, but node %s does not answer: %v", n.Name, err)
			continue
		}
		switch {
		case n.Name == primary && info["role"] != "master":
			r.t.Errorf("Running, but the primary %s says it is a %s", n.Name, info["role"])
		case n.Name != primary && (info["role"] != "slave" || !strings.HasPrefix(info["master_host"], primary+".") && info["master_host"] != r.podIP(primary)):
			r.t.Errorf("Running, but %s is a %s of %q, not a replica of %s", n.Name, info["role"], info["master_host"], primary)
		}
	}
	p := r.client(r.podIP(primary))
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Set(ctx, "running-takes-writes", "yes", 0).Err(); err != nil {
		r.t.Errorf("Running, but the primary %s refuses a write: %v", primary, err)
		return
	}
	// WAIT answers how many replicas hold the write, which may be more
	// than asked while a node scaled away is still going.
	if n, err := p.Do(ctx, "WAIT", len(r.rec.Status.Nodes)-1, 3000).Int64(); err != nil || n < int64(len(r.rec.Status.Nodes)-1) {
		r.t.Errorf("Running, but WAIT on the primary %s: %d replicas (%v)", primary, n, err)
	}
}

// lostWrites checks h, a stopped workload's history, against the final
// primary and returns how many of its keys hold there a value no history
// of the acknowledged ops allows (a write lost, or an old value back). It
// then checks every replica once it has caught up: an op acknowledged by
// WAIT 1 may not have reached the other replicas yet, so each replica is
// read once its offset, in the primary's history, reaches the primary's
// offset as it was after the last op.
func (r *redisCluster) lostWrites(h workload.History) int {
	r.t.Helper()
	r.refresh()
	primary := r.rec.Status.Primary
	info, err := r.replication(primary)
	if err != nil {
		r.t.Fatalf("the primary %s: %v", primary, err)
	}
	lost := r.checkNodes(h, primary)[primary]
	for _, n := range r.rec.Status.Nodes {
		if n.Name == primary {
			continue
		}
		r.waitCaughtUp(n.Name, info["master_replid"], info["master_repl_offset"])
		r.checkNodes(h, n.Name)
	}
	return lost
}

// waitCaughtUp waits until the named replica holds the history replID up
// to offset at least, and fails the test if it does not within 30 s.
func (r *redisCluster) waitCaughtUp(name, replID, offset string) {
	r.t.Helper()
	want, err := strconv.ParseInt(offset, 10, 64)
	if err != nil {
		r.t.Fatalf("the primary's offset %q: %v", offset, err)
	}
	testenv.Eventually(r.t, 30*time.Second, func() (bool, string) {
		info, err := r.replication(name)
		if err != nil {
			return false, err.Error()
		}
		got, _ := strconv.ParseInt(info["master_repl_offset"], 10, 64)
		return info["master_replid"] == replID && info["master_link_status"] == "up" && got >= want,
			fmt.Sprintf("replica %s: history %s at offset %d, link %s; want the primary's history %s at offset %d", name, info["master_replid"], got, info["master_link_status"], replID, want)
	})
}

// finish ends a cell: it waits for one write to be acknowledged after
// Running, stops the writer, checks what Running claims and that no
// acknowledged write is lost, and records the cell; it returns the ops
// acknowledged and the keys on which one is lost. It stops at the first
// write: every later one could overwrite a key rolled back by the fault
// and hide the loss from the check.
func (r *redisCluster) finish(w *workload.Register, fault string, toReady time.Duration) (acked, lost int) {
	r.t.Helper()
	waitWrites(r.t, w, 1)
	h := w.Stop()
	r.checkRunningTakesWrites()
	lost = r.lostWrites(h)
	recordCell(faultCell{kind: "Redis", fault: fault, acked: h.Acked(), lost: lost, unavailable: w.LongestGap(), toReady: toReady})
	return h.Acked(), lost
}

// podUID returns the uid of the named pod ("" when there is none).
func (r *redisCluster) podUID(name string) types.UID {
	pod := &corev1.Pod{}
	if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: r.rec.Namespace, Name: name}, pod); err != nil {
		return ""
	}
	return pod.UID
}

// With persistence off, the operator stopped and the primary's pod
// deleted: the pod comes back empty. It must not become the primary, nor
// may the replicas resynchronise from it and drop the writes they hold,
// whether or not the operator is there; once the operator is back, a
// replica that holds every write is promoted.
func TestRedisFaultPrimaryRestartsEmptyWhileTheOperatorIsAway(t *testing.T) {
	c, op, r := startCell(t, "away", false)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary

	w := r.startWriterWaiting("away", 2, cellWritePause)
	waitWrites(t, w, 200)
	op.Stop()
	old := r.podUID(primary)
	if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pod := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: primary}, pod); err != nil {
			return false, err.Error()
		}
		return pod.UID != old && podReady(pod), fmt.Sprintf("pod %s: uid %s, ready %v", primary, pod.UID, podReady(pod))
	})
	// The replicas' links retry every second: give them the time to
	// resynchronise from the empty node, were it to let them.
	time.Sleep(5 * time.Second)
	for _, n := range r.rec.Status.Nodes {
		info, err := r.replication(n.Name)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		if info["role"] == "master" {
			t.Errorf("with the operator away, %s is a primary (it should boot a replica)", n.Name)
		}
	}
	back := time.Now()
	startOperator(t, cellOperatorOptions(ns))
	// The status still says what it said before the operator left: wait
	// for the operator to act on what happened since.
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		r.refresh()
		return r.rec.Status.Primary != primary, "the primary is still " + primary
	})
	r.waitRunning(3 * time.Minute)
	toReady := time.Since(back)
	acked, lost := r.finish(w, "persistence off, operator away, the primary's pod deleted", toReady)
	t.Logf("the primary %s came back empty with the operator away; %s is the primary %v after the operator returned; %d writes acknowledged (WAIT 2), %d lost",
		primary, r.rec.Status.Primary, toReady.Round(time.Millisecond), acked, lost)
}

// The operator alone cut off from the primary's pod for 30 s (its packets
// dropped by its uid; the clients, the kubelet and the replicas still reach
// the pod): the replicas still stream from the primary, so the operator
// fails nothing over, says it cannot reach the primary, and no write is
// lost.
func TestRedisFaultOperatorAloneCutOffFromThePrimary(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperatorAsItsUID(t, ns, "--redis-failover-after="+cellFailoverAfter.String())
	r := newRedisCell(t, c, ns, "cut", true, 3)
	primary := r.rec.Status.Primary

	w := r.startWriterWaiting("cut", 1, cellWritePause)
	waitWrites(t, w, 200)
	heal := cutOperatorFrom(t, r.podIP(primary))
	cut := time.Now()
	reasons := map[string]bool{}
	for time.Since(cut) < 30*time.Second {
		time.Sleep(500 * time.Millisecond)
		r.refresh()
		if r.rec.Status.Primary != primary {
			t.Errorf("the operator, cut off from %s alone, made %s the primary", primary, r.rec.Status.Primary)
			break
		}
		for _, cond := range r.rec.Status.Conditions {
			if cond.Type == conditions.Ready {
				reasons[cond.Reason] = true
			}
		}
	}
	heal()
	healed := time.Now()
	if !reasons[redisv1alpha1.ReasonPrimaryUnreachable] {
		t.Errorf("Ready reasons during the cut: %v; want %s", reasons, redisv1alpha1.ReasonPrimaryUnreachable)
	}
	if got := r.waitRunning(2 * time.Minute); got != primary {
		t.Errorf("primary %s after the cut, want %s kept", got, primary)
	}
	toReady := time.Since(healed)
	acked, lost := r.finish(w, "persistence on, the operator alone cut off from the primary for 30 s", toReady)
	t.Logf("cut off from %s for 30 s: Ready reasons %v; Running %v after the cut healed; %d writes acknowledged (WAIT 1), %d lost, longest gap %v",
		primary, reasons, toReady.Round(time.Millisecond), acked, lost, w.LongestGap().Round(time.Millisecond))
}

// The primary frozen (SIGSTOP) for less than the failover window: nothing
// fails over. Frozen for longer: a replica is promoted, and the old
// primary, thawed, is fenced into a replica, with no acknowledged write
// lost either way. Then the status cleared: the operator finds the
// primary again rather than electing another.
func TestRedisFaultPrimaryFrozenAndStatusCleared(t *testing.T) {
	c, _, r := startCell(t, "frozen", false)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary

	// Each subtest reports through its own t.
	in := func(t *testing.T) *redisCluster { sub := *r; sub.t = t; return &sub }
	t.Run("the status stays still while a client writes", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("rest", 1, cellWritePause)
		waitWrites(t, w, 100)
		r.refresh()
		seen := []*redisv1alpha1.RedisEnterpriseCluster{r.rec.DeepCopy()}
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
			time.Sleep(250 * time.Millisecond)
			r.refresh()
			if last := seen[len(seen)-1]; r.rec.ResourceVersion != last.ResourceVersion {
				seen = append(seen, r.rec.DeepCopy())
			}
		}
		h := w.Stop()
		for i := 1; i < len(seen); i++ {
			t.Errorf("the resource moved while Running and taking writes (%d writes): resourceVersion %s -> %s:\n%s",
				h.Acked(), seen[i-1].ResourceVersion, seen[i].ResourceVersion, resourceChange(seen[i-1], seen[i]))
		}
	})

	t.Run("frozen for less than the window", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("short", 1, cellWritePause)
		waitWrites(t, w, 200)
		freezePod(t, c, ns, primary)
		time.Sleep(2 * time.Second)
		thawPod(t, c, ns, primary)
		thawed := time.Now()
		got := r.waitRunning(time.Minute)
		if got != primary {
			t.Errorf("a 2 s freeze, within the %s window, moved the primary from %s to %s", cellFailoverAfter, primary, got)
		}
		r.finish(w, "the primary frozen for 2 s (window "+cellFailoverAfter.String()+")", time.Since(thawed))
	})

	t.Run("frozen for longer than the window", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("long", 1, cellWritePause)
		waitWrites(t, w, 200)
		newPrimary, toReady := r.freezePastTheWindow(w, primary)
		r.finish(w, "the primary frozen for longer than the window", toReady)
		primary = newPrimary
	})

	t.Run("status cleared", func(t *testing.T) {
		r := in(t)
		w := r.startWriterWaiting("cleared", 1, cellWritePause)
		waitWrites(t, w, 200)
		r.refresh()
		r.rec.Status = redisv1alpha1.RedisEnterpriseClusterStatus{}
		if err := c.Status().Update(context.Background(), r.rec); err != nil {
			t.Fatal(err)
		}
		cleared := time.Now()
		got := r.waitRunning(time.Minute)
		toReady := time.Since(cleared)
		if got != primary {
			t.Errorf("with its status cleared, the cluster's primary moved from %s to %s", primary, got)
		}
		r.finish(w, "status cleared", toReady)
	})
}

// freezePastTheWindow freezes the primary until the operator has promoted
// another node and writes are acknowledged again, thaws it, and checks
// that it is fenced into a replica of the new primary. It returns the new
// primary and how long the status took to say Running after the thaw.
func (r *redisCluster) freezePastTheWindow(w *workload.Register, primary string) (newPrimary string, toReady time.Duration) {
	r.t.Helper()
	ns := r.rec.Namespace
	freezePod(r.t, r.c, ns, primary)
	testenv.Eventually(r.t, time.Minute, func() (bool, string) {
		r.refresh()
		return r.rec.Status.Primary != primary, "the primary is still " + r.rec.Status.Primary
	})
	waitWrites(r.t, w, 50)
	thawPod(r.t, r.c, ns, primary)
	thawed := time.Now()
	newPrimary = r.waitRunning(2 * time.Minute)
	toReady = time.Since(thawed)
	info, err := r.replication(primary)
	if err != nil || info["role"] != "slave" || !strings.HasPrefix(info["master_host"], newPrimary+".") {
		r.t.Errorf("the old primary %s, thawed: role %s of %s (%v); want a replica of %s", primary, info["role"], info["master_host"], err, newPrimary)
	}
	return newPrimary, toReady
}

// A cluster deleted and created again over the claims its StatefulSet
// keeps: no node boots as the primary, the operator elects the node
// furthest along once every node answers, and every acknowledged write is
// still there.
func TestRedisFaultRecreatedOverItsClaims(t *testing.T) {
	c, _, r := startCell(t, "again", true)
	ctx, ns := context.Background(), r.rec.Namespace
	w := r.startWriterWaiting("again", 1, cellWritePause)
	waitWrites(t, w, 300)
	h := w.Stop()
	spec := r.rec.Spec.DeepCopy()
	if err := c.Delete(ctx, r.rec, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(redisenterprisecluster.Selector("again"))); err != nil {
			return false, err.Error()
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(r.rec), &redisv1alpha1.RedisEnterpriseCluster{})
		return len(pods.Items) == 0 && err != nil, fmt.Sprintf("%d pods left", len(pods.Items))
	})
	created := time.Now()
	again := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again"}, Spec: *spec}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	r.rec = again
	r.waitRunning(3 * time.Minute)
	toReady := time.Since(created)
	// The Secret went with the cluster: the new one has a new password.
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "again"}, secret); err != nil {
		t.Fatal(err)
	}
	r.password = string(secret.Data[redisenterprisecluster.SecretPassword])
	r.checkRunningTakesWrites()
	lost := r.lostWrites(h)
	recordCell(faultCell{kind: "Redis", fault: "deleted and created again over its claims", acked: h.Acked(), lost: lost, toReady: toReady})
}

// A cluster deleted with its children orphaned, then applied again (a
// GitOps tool, a restore without the status), under writes: the new
// resource adopts the running nodes, finds the primary that is there
// rather than electing another, restarts no pod and loses no write.
func TestRedisFaultOrphanDeletedAndAppliedAgain(t *testing.T) {
	c, _, r := startCell(t, "orphan", false)
	ctx, ns, primary := context.Background(), r.rec.Namespace, r.rec.Status.Primary
	uids := map[string]types.UID{}
	for _, n := range r.rec.Status.Nodes {
		uids[n.Name] = r.podUID(n.Name)
	}
	w := r.startWriterWaiting("orphan", 1, cellWritePause)
	waitWrites(t, w, 200)
	spec := r.rec.Spec.DeepCopy()
	if err := c.Delete(ctx, r.rec, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(r.rec), &redisv1alpha1.RedisEnterpriseCluster{})
		return err != nil, "the resource is still there"
	})
	applied := time.Now()
	again := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Spec: *spec}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	r.rec = again
	got := r.waitRunning(2 * time.Minute)
	toReady := time.Since(applied)
	if got != primary {
		t.Errorf("applied again, the cluster's primary moved from %s to %s", primary, got)
	}
	for name, uid := range uids {
		if now := r.podUID(name); now != uid {
			t.Errorf("pod %s was replaced (uid %s, was %s)", name, now, uid)
		}
	}
	r.finish(w, "deleted with its children orphaned and applied again", toReady)
}

// resourceChange says what differs between two versions of a resource
// apart from its resourceVersion, and which managers wrote the later one.
func resourceChange(before, after *redisv1alpha1.RedisEnterpriseCluster) string {
	strip := func(o *redisv1alpha1.RedisEnterpriseCluster) *redisv1alpha1.RedisEnterpriseCluster {
		o = o.DeepCopy()
		o.ResourceVersion, o.ManagedFields = "", nil
		return o
	}
	writers := make([]string, 0, len(after.ManagedFields))
	for _, f := range after.ManagedFields {
		writers = append(writers, fmt.Sprintf("%s %s %q at %s", f.Manager, f.Operation, f.Subresource, f.Time))
	}
	return cmp.Diff(strip(before), strip(after)) + "managers: " + strings.Join(writers, "; ")
}
