package realpods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// kvInput and kvOutput are one operation of the recorded history: a put
// of a value that is never written twice, or a get.
type kvInput struct {
	put        bool
	key, value string
}

type kvOutput struct {
	value string
	// unknown: a put that got no answer; it may have been applied.
	unknown bool
}

// kvModel is a register per key: a get returns the last value put.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.put {
			return true, in.value
		}
		return output.(kvOutput).value == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		if in.put {
			return fmt.Sprintf("put(%s, %s) unknown=%v", in.key, in.value, out.unknown)
		}
		return fmt.Sprintf("get(%s) -> %q", in.key, out.value)
	},
}

// etcdHistory is what clients writing and reading the whole time did:
// every operation with its call and return times and its answer.
type etcdHistory struct {
	start time.Time
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu  sync.Mutex
	ops []porcupine.Operation
	// acked are the values of the puts etcd acknowledged, by key.
	acked map[string][]string
	// failures are the errors the clients got, counted by message.
	failures map[string]int
	// refused counts the puts etcd refused with its NOSPACE error, which
	// it gives a put it did not apply (the capped applier's answer): they
	// are left out of the history, as operations that did nothing.
	refused int
	// lost is the number of acknowledged puts missing from the keys'
	// history (set by check).
	lost int
	// revisions are the revisions of the acknowledged puts, by value.
	revisions map[string]int64
	// compacted is the revision etcd's history was compacted to (the
	// operator's remedy of a NOSPACE alarm); 0 while it holds every
	// revision (set by check).
	compacted int64
}

// historyKeys are the registers the clients write and read.
const historyKeys = 4

// writesBeforeFault is how many puts the clients have acknowledged before
// a test breaks something, and again once the cluster is Ready after: the
// history then spans the fault, whatever the machine's load.
const writesBeforeFault = 20

// startEtcdHistory starts clients that put and get keys through endpoint
// (the client Service, as an application reaches etcd) back to back until
// Stop.
func startEtcdHistory(t *testing.T, endpoint string, clients int) *etcdHistory {
	t.Helper()
	return startEtcdHistoryAt(t, []string{endpoint}, clients)
}

// startEtcdHistoryAt is startEtcdHistory with client i at endpoints[i %
// len(endpoints)], one history over them all.
func startEtcdHistoryAt(t *testing.T, endpoints []string, clients int) *etcdHistory {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &etcdHistory{start: time.Now(), stop: cancel, acked: map[string][]string{}, failures: map[string]int{}, revisions: map[string]int64{}}
	for id := range clients {
		cli, err := etcdClient([]string{endpoints[id%len(endpoints)]})
		if err != nil {
			t.Fatal(err)
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer cli.Close()
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("history/%d", (i/2+id)%historyKeys)
				in := kvInput{put: i%2 == 0, key: key, value: fmt.Sprintf("c%d-%d", id, i)}
				call := time.Since(h.start).Nanoseconds()
				c, done := context.WithTimeout(ctx, 2*time.Second)
				var out kvOutput
				var err error
				var rev int64
				if in.put {
					var resp *clientv3.PutResponse
					if resp, err = cli.Put(c, key, in.value); err == nil {
						rev = resp.Header.Revision
					}
				} else {
					var resp *clientv3.GetResponse
					if resp, err = cli.Get(c, key); err == nil && len(resp.Kvs) > 0 {
						out.value = string(resp.Kvs[0].Value)
					}
				}
				done()
				ret := time.Since(h.start).Nanoseconds()
				h.mu.Lock()
				switch {
				case err == nil:
					h.ops = append(h.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
					if in.put {
						h.acked[key] = append(h.acked[key], in.value)
						h.revisions[in.value] = rev
					}
				case in.put && errors.Is(err, rpctypes.ErrNoSpace):
					h.refused++
				case in.put:
					// No answer: it may still take effect, at any time
					// after its call (its return is set when the run ends).
					out.unknown = true
					h.ops = append(h.ops, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: -1})
				}
				if err != nil && ctx.Err() == nil {
					h.failures[err.Error()]++
				}
				h.mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	t.Cleanup(h.Stop)
	return h
}

// Stop ends the clients.
func (h *etcdHistory) Stop() {
	h.stop()
	h.wg.Wait()
}

func (h *etcdHistory) acknowledged() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, vs := range h.acked {
		n += len(vs)
	}
	return n
}

// waitAcknowledged waits until the clients have n more puts acknowledged.
func (h *etcdHistory) waitAcknowledged(t *testing.T, n int) {
	t.Helper()
	before := h.acknowledged()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		got := h.acknowledged() - before
		return got >= n, fmt.Sprintf("%d of %d puts acknowledged (clients saw: %s)", got, n, h.failureSummary())
	})
}

// check stops the clients and checks the history: it is linearizable
// (porcupine), and every acknowledged put is in its key's history as etcd
// keeps it (a watch from the first revision, or, once compacted, from the
// compacted revision, where each key's last value before it counts), read
// through cli.
func (h *etcdHistory) check(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	h.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.applied(t, cli)

	// A put without an answer whose value etcd's history never held did
	// not take effect: it is left out, rather than checked as one that may
	// take effect at any time (many of those make the check exponential).
	end := time.Since(h.start).Nanoseconds()
	ops := make([]porcupine.Operation, 0, len(h.ops))
	for _, op := range h.ops {
		if op.Return < 0 {
			// Past a compaction, a put that is not seen may have taken
			// effect before it: it is checked as one that may take
			// effect at any time.
			if !seen[op.Input.(kvInput).value] && h.compacted == 0 {
				continue
			}
			op.Return = end
		}
		ops = append(ops, op)
	}
	res, _ := porcupine.CheckOperationsVerbose(kvModel, ops, time.Minute)
	switch res {
	case porcupine.Illegal:
		t.Errorf("the history of %d operations is not linearizable", len(ops))
	case porcupine.Unknown:
		t.Errorf("the linearizability check of %d operations timed out", len(ops))
	}

	var missing []string
	for _, vs := range h.acked {
		for _, v := range vs {
			// A put overwritten before the compaction is gone from etcd's
			// history; the last one before it was read at its revision.
			if !seen[v] && h.revisions[v] >= h.compacted {
				missing = append(missing, v)
			}
		}
	}
	h.lost = len(missing)
	if h.lost > 0 {
		t.Errorf("%d acknowledged writes are missing from etcd's history: %v", h.lost, missing)
	}
}

// applied returns every value a put under the history's prefix wrote, as
// etcd's own history of the keys (a watch from the first revision) holds
// them.
func (h *etcdHistory) applied(t *testing.T, cli *clientv3.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The revision of the last put under the prefix: the watch reads
	// until it has delivered that put (it delivers events in batches).
	last, err := cli.Get(ctx, "history/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil || len(last.Kvs) == 0 {
		t.Fatalf("read the history's last revision: %v (%v)", last, err)
	}
	lastRev := last.Kvs[0].ModRevision
	seen := map[string]bool{}
	wc := cli.Watch(ctx, "history/", clientv3.WithPrefix(), clientv3.WithRev(1))
	for done := false; !done; {
		resp, ok := <-wc
		if !ok {
			t.Fatalf("the watch of the history ended before revision %d: %v", lastRev, ctx.Err())
		}
		if resp.CompactRevision > 0 && h.compacted == 0 {
			// Compacted (the operator's NOSPACE remedy): the history
			// starts at the compacted revision, where each key holds
			// the last value put before it.
			h.compacted = resp.CompactRevision
			at, err := cli.Get(ctx, "history/", clientv3.WithPrefix(), clientv3.WithRev(h.compacted))
			if err != nil {
				t.Fatalf("read the history at its compacted revision %d: %v", h.compacted, err)
			}
			for _, kv := range at.Kvs {
				seen[string(kv.Value)] = true
			}
			wc = cli.Watch(ctx, "history/", clientv3.WithPrefix(), clientv3.WithRev(h.compacted))
			continue
		}
		if err := resp.Err(); err != nil {
			t.Fatalf("watch the history: %v", err)
		}
		for _, ev := range resp.Events {
			seen[string(ev.Kv.Value)] = true
			done = done || ev.Kv.ModRevision >= lastRev
		}
	}
	return seen
}

// failureSummary returns the clients' errors, most frequent first.
func (h *etcdHistory) failureSummary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	msgs := slices.Collect(maps.Keys(h.failures))
	slices.SortFunc(msgs, func(a, b string) int { return h.failures[b] - h.failures[a] })
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("%d× %s", h.failures[m], m))
	}
	return strings.Join(parts, "; ")
}

// leaderWatch measures the longest time no member of an EtcdCluster
// serves a linearizable read (which needs a leader), asking each pod in
// turn, every 100 ms.
type leaderWatch struct {
	stop context.CancelFunc
	done chan struct{}

	once sync.Once
	mu   sync.Mutex
	// longest is the longest time between two reads served (from the
	// start, and to the end): a read that waits for an election counts
	// its wait, the poll interval counts too.
	longest time.Duration
}

func watchLeader(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) *leaderWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &leaderWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// One client per member, kept: a poll measures the member, not a
		// new connection.
		clients := map[string]*clientv3.Client{}
		defer func() {
			for _, cli := range clients {
				cli.Close()
			}
		}()
		last := time.Now()
		for ctx.Err() == nil {
			ok := false
			for _, url := range etcdEndpoints(ctx, c, e) {
				cli := clients[url]
				if cli == nil {
					var err error
					if cli, err = etcdClient([]string{url}); err != nil {
						continue
					}
					clients[url] = cli
				}
				rc, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := cli.Get(rc, "leader-check")
				cancel()
				if ok = err == nil; ok {
					break
				}
			}
			if ctx.Err() == nil {
				now := time.Now()
				w.mu.Lock()
				w.longest = max(w.longest, now.Sub(last))
				w.mu.Unlock()
				if ok {
					last = now
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { w.Stop() })
	return w
}

// Stop ends the watch and returns the longest time no member served.
func (w *leaderWatch) Stop() time.Duration {
	w.once.Do(func() {
		w.stop()
		<-w.done
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest
}

// checkHashKV checks that every member of e holds the same keys and
// values at the latest revision (etcd's HashKV), waiting for the members
// to apply it.
func checkHashKV(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		endpoints := etcdEndpoints(context.Background(), c, e)
		cli, err := etcdClient(endpoints)
		if err != nil {
			return false, err.Error()
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "history/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err.Error()
		}
		rev := resp.Header.Revision
		hashes := map[string]uint32{}
		for _, url := range endpoints {
			h, err := cli.HashKV(ctx, url, rev)
			if err != nil {
				return false, fmt.Sprintf("HashKV of %s at %d: %v", url, rev, err)
			}
			hashes[url] = h.Hash
		}
		distinct := slices.Compact(slices.Sorted(maps.Values(hashes)))
		return len(hashes) == int(e.Spec.Size) && len(distinct) == 1, fmt.Sprintf("HashKV at revision %d: %v", rev, hashes)
	})
}

// etcdRestarts maps e's member pods to their etcd container's restart count.
func etcdRestarts(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) map[string]int32 {
	t.Helper()
	return containerRestarts(t, c, e.Namespace, etcdcluster.Selector(e.Name), etcdcluster.ContainerName)
}

// containerRestarts returns the restart count of the container called
// container of each pod of namespace ns that selector selects.
func containerRestarts(t *testing.T, c client.Client, ns string, selector map[string]string, container string) map[string]int32 {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container {
				out[p.Name] = cs.RestartCount
			}
		}
	}
	return out
}

// clientServiceURL returns the client URL of e's client Service.
func clientServiceURL(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: e.Namespace, Name: etcdcluster.ClientServiceName(e.Name)}, svc); err != nil {
		t.Fatal(err)
	}
	return string(etcdcluster.SchemeOf(&e.Spec)) + "://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(etcdcluster.ClientPort))
}

// An EtcdCluster deleted with --cascade=orphan and applied again, as a
// GitOps tool or a restore without the status does, while clients write
// and read the whole time: the new resource adopts the running members.
// No pod is deleted, no member restarts (the same pod uids and restart
// counts, the same member IDs and claims), the history the clients saw is
// linearizable with every acknowledged write kept, and every member ends
// with the same HashKV.
func TestEtcdClusterRecreatedOverRunningMembersAdoptsThemWithoutARestart(t *testing.T) {
	ctx := context.Background()
	c, e := startEtcdSample(t, "orphan", etcdVersion)
	ns, spec := e.Namespace, e.Spec
	ids := etcdMemberIDs(e)
	pods, claims, restarts := etcdPodUIDs(t, c, e), etcdClaimUIDs(t, c, e), etcdRestarts(t, c, e)

	h := startEtcdHistory(t, clientServiceURL(t, c, e), 2)
	leader := watchLeader(t, c, e)
	h.waitAcknowledged(t, writesBeforeFault)

	// kubectl delete --cascade=orphan: the children stay, without their
	// owner reference.
	if err := c.Delete(ctx, e, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(e), &etcdv1beta2.EtcdCluster{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err)
	})
	// Applied again: the same spec, no status.
	start := time.Now()
	e = &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}, Spec: spec}
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	// Until Ready, no member pod may go: a deleted pod is the failure,
	// reported at once.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if now := etcdPodUIDs(t, c, e); !maps.Equal(now, pods) {
			t.Fatalf("member pods %v after the EtcdCluster was applied again, want %v: none deleted (clients saw: %s)\n%s",
				now, pods, h.failureSummary(), testenv.NamespaceState(c, ns))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			t.Fatal(err)
		}
		if r := findCondition(e.Status.Conditions, "Ready"); r != nil && r.Status == metav1.ConditionTrue && len(e.Status.Members) == 3 && e.Status.ObservedGeneration == e.Generation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Ready 3 min after it was applied again: %+v", e.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	toReady := time.Since(start)
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	time.Sleep(3 * time.Second)
	leaderless := leader.Stop()
	h.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)

	checkMembersKept(t, c, e, "the EtcdCluster was applied again", ids, pods, claims)
	if got := etcdRestarts(t, c, e); !maps.Equal(got, restarts) {
		t.Errorf("container restarts %v, want %v: no member restarted", got, restarts)
	}
	waitStatefulSetAdopted(t, c, e)
	recordCell(faultCell{kind: "etcd", fault: "deleted with its children orphaned and applied again over running members",
		acked: h.acknowledged(), lost: h.lost, unavailable: leaderless, toReady: toReady})
	t.Logf("applied again: Ready in %s; %d writes acknowledged, %d lost, %s without a leader; client errors: %s",
		toReady.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond), h.failureSummary())
}

// waitStatefulSetAdopted waits until e controls its StatefulSet.
func waitStatefulSetAdopted(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		sts := &appsv1.StatefulSet{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), sts); err != nil {
			return false, err.Error()
		}
		var uid types.UID
		if ref := metav1.GetControllerOf(sts); ref != nil {
			uid = ref.UID
		}
		return uid == e.UID, fmt.Sprintf("StatefulSet controlled by %q, want the EtcdCluster %s", uid, e.UID)
	})
}
