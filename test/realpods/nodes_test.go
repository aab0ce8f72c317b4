package realpods

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The tests of several nodes: they run when the cluster has three
// (APP_OPERATOR_NODES=3), and skip on the one node of the default run.
// They run one at a time (no t.Parallel): a node stopped by one test would
// fail another's placement.

// waitNodeReady waits until node name's Ready condition is ready.
func waitNodeReady(t *testing.T, c client.Client, name string, ready bool, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		node := &corev1.Node{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
			return false, err.Error()
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return (cond.Status == corev1.ConditionTrue) == ready, fmt.Sprintf("node %s Ready=%s: %s", name, cond.Status, cond.Message)
			}
		}
		return false, "no Ready condition on node " + name
	})
}

// holdMembers checks, for d, that e keeps the members ids (none removed
// or added) while its status says what want says.
func holdMembers(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, ids map[string]string, d time.Duration, want func(ready *metav1.Condition) bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), e); err != nil {
			t.Fatal(err)
		}
		if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
			t.Fatalf("members %v, want %v kept", got, ids)
		}
		if ready := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready); !want(ready) {
			t.Fatalf("Ready condition %+v", ready)
		}
	}
}

// podNodes returns the node of each pod of e, by pod name, and the node
// each pod's claim is pinned to, by pod name.
func podNodes(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) (pods, volumes map[string]string) {
	t.Helper()
	ctx := context.Background()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		t.Fatal(err)
	}
	pods, volumes = map[string]string{}, map[string]string{}
	for _, p := range list.Items {
		pods[p.Name] = p.Spec.NodeName
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			var claim corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, &claim); err != nil {
				t.Fatal(err)
			}
			var pv corev1.PersistentVolume
			if err := c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, &pv); err != nil {
				t.Fatal(err)
			}
			volumes[p.Name] = pinnedNode(&pv)
		}
	}
	return pods, volumes
}

// pinnedNode is the one node a PersistentVolume's node affinity allows.
func pinnedNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if req.Key == corev1.LabelHostname && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

func TestNodesEtcdMembersSpreadOverTheNodesWithTheirVolumes(t *testing.T) {
	needNodes(t, 3)
	c, e := runEtcdSample(t, "spread", etcdVersion)
	pods, volumes := podNodes(t, c, e)
	seen := map[string]bool{}
	for pod, node := range pods {
		if node == "" || seen[node] {
			t.Errorf("members on nodes %v, want each on a node of its own", pods)
		}
		seen[node] = true
		if volumes[pod] != node {
			t.Errorf("member %s runs on %s, its volume is pinned to %q", pod, node, volumes[pod])
		}
	}
	// A client on the host reaches the members through the Service's
	// cluster IP, whichever node serves it.
	cli, err := etcdClient([]string{clientServiceURL(t, c, e)})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	keys := writeKeys(t, cli, "spread", 20)
	checkKeys(t, c, e, keys)
	t.Logf("members on %v, volumes on %v", pods, volumes)
}

// A member's node lost (its network, kubelet, containerd and containers
// gone at once) while clients write: the other two keep the quorum, the
// status names the member down, and nothing is replaced while the Node
// is there (it may come back with the member's data). Once the Node is
// deleted (the machine is gone for good), the member's pod cannot come
// back (its volume was on that node): the operator gives it a new volume
// on another node and replaces the member. The old node, started again,
// brings back no old member.
func TestNodesEtcdNodeLostKeepsTheQuorumAndReplacesTheMemberOnceTheNodeIsGone(t *testing.T) {
	needNodes(t, 3)
	c, e := runEtcdSample(t, "nodelost", etcdVersion)
	cell := watchEtcdCell(t, c, e)
	ids := etcdMemberIDs(e)
	victim := e.Status.Leader
	pods, _ := podNodes(t, c, e)
	node := pods[victim]
	ctx := context.Background()

	start := time.Now()
	startAgain := stopNode(t, node)
	waitNodeReady(t, c, node, false, 3*time.Minute)
	notReady := time.Since(start)
	cond := waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonMemberUnhealthy, 2*time.Minute)
	if !strings.Contains(cond.Message, victim) {
		t.Errorf("Ready=False %s: %q, want the member down named (%s)", cond.Reason, cond.Message, victim)
	}
	// The node may come back: the member is kept.
	holdMembers(t, c, e, ids, 30*time.Second, func(ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == etcdv1beta2.ReasonMemberUnhealthy
	})

	gone := time.Now()
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 8*time.Minute)
	toReady := time.Since(gone)
	after := etcdMemberIDs(e)
	for name, id := range ids {
		switch {
		case name == victim && after[name] == id:
			t.Errorf("member %s kept its ID %s, want it replaced", name, id)
		case name != victim && after[name] != id:
			t.Errorf("member %s has ID %s, want %s kept", name, after[name], id)
		}
	}
	pods, volumes := podNodes(t, c, e)
	for pod, on := range pods {
		if on == node || volumes[pod] != on {
			t.Errorf("member %s on node %s with its volume on %q, want both on a node other than %s", pod, on, volumes[pod], node)
		}
	}

	// The old machine back: it brings back no old member.
	startAgain()
	holdMembers(t, c, e, after, 20*time.Second, func(ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionTrue
	})
	t.Logf("leader %s's node %s stopped: NotReady after %s; Node deleted: %s replaced (ID %s -> %s) on node %s, Ready %s after",
		victim, node, notReady.Round(time.Second), victim, ids[victim], after[victim], pods[victim], toReady.Round(time.Second))
	cell.finish(t, "a member's node lost, then deleted", toReady)
}

// startNodesRedisCell starts, on three nodes, a cell's operator and a
// running cluster called name with persistence on.
func startNodesRedisCell(t *testing.T, name string) (client.Client, *redisCluster) {
	t.Helper()
	needNodes(t, 3)
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	return c, newRedisCell(t, c, ns, name, true, 3)
}

// podNodeOf returns the node of pod namespace/name ("" while it is not
// scheduled) and the uid of the pod.
func podNodeOf(t *testing.T, c client.Client, namespace, name string) (node string, uid types.UID) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return pod.Spec.NodeName, pod.UID
}

// The node of a Redis cluster's primary lost while a client writes (each
// write acknowledged once a replica holds it): the operator fails over to
// a replica on another node; nothing is replaced while the Node is there.
// Once the Node is deleted, the old primary's pod cannot come back where
// its volume was: it gets a new volume on another node and syncs as a
// replica. The old node, started again, brings back no old primary.
func TestNodesRedisPrimaryNodeLostFailsOverAndTheNodeIsReplacedOnceGone(t *testing.T) {
	c, r := startNodesRedisCell(t, "nodelost")
	ns := r.rec.Namespace
	primary := r.rec.Status.Primary
	placed := map[string]string{}
	for _, n := range r.rec.Status.Nodes {
		on, _ := podNodeOf(t, c, ns, n.Name)
		if slices.Contains(slices.Collect(maps.Values(placed)), on) {
			t.Fatalf("Redis nodes on %v and %s on %s: want each on a node of its own", placed, n.Name, on)
		}
		placed[n.Name] = on
	}
	node := placed[primary]
	ctx := context.Background()

	w := r.startWriter("nodelost")
	waitWrites(t, w, 200)
	start := time.Now()
	startAgain := stopNode(t, node)
	var newPrimary string
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		r.refresh()
		newPrimary = r.rec.Status.Primary
		return newPrimary != primary && newPrimary != "", fmt.Sprintf("primary %q", newPrimary)
	})
	failedOver := time.Since(start)
	waitWrites(t, w, 100)
	if placed[newPrimary] == node {
		t.Fatalf("new primary %s on the lost node %s", newPrimary, node)
	}
	waitNodeReady(t, c, node, false, 3*time.Minute)
	// The node may come back: the old primary's pod and volume are kept.
	_, oldUID := podNodeOf(t, c, ns, primary)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if _, uid := podNodeOf(t, c, ns, primary); uid != oldUID {
			t.Fatalf("pod %s replaced while its node %s is still there", primary, node)
		}
	}

	gone := time.Now()
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	if got := r.waitRunning(8 * time.Minute); got != newPrimary {
		t.Errorf("primary %s once Running again, want %s kept", got, newPrimary)
	}
	toReady := time.Since(gone)
	if on, _ := podNodeOf(t, c, ns, primary); on == node || on == "" {
		t.Errorf("the old primary %s runs on %q, want a node other than %s", primary, on, node)
	}

	// The old machine back: it brings back no old primary.
	startAgain()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		r.refresh()
		if r.rec.Status.Primary != newPrimary || r.rec.Status.State != redisv1alpha1.StateRunning {
			t.Fatalf("primary %q state %s after node %s came back, want %s Running", r.rec.Status.Primary, r.rec.Status.State, node, newPrimary)
		}
	}
	acked, lost := r.finish(w, "the primary's node lost, then deleted", toReady)
	t.Logf("primary %s's node %s stopped: %s primary %s after; Node deleted: %s back as a replica on a new volume, Running %s after; %d writes acknowledged, %d lost, longest gap %s",
		primary, node, newPrimary, failedOver.Round(time.Second), primary, toReady.Round(time.Second), acked, lost, w.LongestGap().Round(100*time.Millisecond))
}

// kubectl runs the cluster's kubectl with args, as the cluster's admin.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	testenv.Kubectl(t, testCluster.BinDir(), testCluster.Kubeconfig, args...)
}

// drainEach drains every node in turn, as a rolling maintenance does:
// kubectl drain (which evicts each pod only while its
// PodDisruptionBudget allows); then it waits until the n pods of selector
// in namespace run elsewhere and ready() returns, and uncordons the node.
func drainEach(t *testing.T, c client.Client, namespace string, selector map[string]string, n int, ready func()) {
	t.Helper()
	for _, node := range testCluster.NodeNames() {
		// A drain that fails leaves no node cordoned for the next test.
		t.Cleanup(func() { kubectl(t, "uncordon", node) })
		kubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=10m")
		testenv.Eventually(t, 8*time.Minute, func() (bool, string) {
			var list corev1.PodList
			if err := c.List(context.Background(), &list, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
				return false, err.Error()
			}
			placed := map[string]string{}
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Spec.NodeName != node {
					placed[p.Name] = p.Spec.NodeName
				}
			}
			return len(placed) == n, fmt.Sprintf("pods placed away from the drained node %s: %v, want %d", node, placed, n)
		})
		ready()
		kubectl(t, "uncordon", node)
	}
}

// Every node drained in turn while clients write: the
// PodDisruptionBudget lets one member go at a time; the member whose node
// is drained cannot come back there (its volume is local to a cordoned
// node), so it moves: a new volume on another node, and the member
// replaced. etcd hands its leadership over before a leader stops.
func TestNodesEtcdDrainEachNodeInTurnMovesOneMemberAtATime(t *testing.T) {
	needNodes(t, 3)
	c, e := runEtcdSample(t, "drain", etcdVersion)
	cell := watchEtcdCell(t, c, e)
	members := watchEtcd(t, c, e)
	start := time.Now()
	drainEach(t, c, e.Namespace, etcdcluster.Selector(e.Name), 3, func() { waitEtcdReady(t, c, e, 3, etcdVersion, 8*time.Minute) })
	took := time.Since(start)
	members.Stop()
	if members.inFlight > 1 {
		t.Errorf("%d members joining at once, want one at a time", members.inFlight)
	}
	pods, volumes := podNodes(t, c, e)
	for pod, on := range pods {
		if volumes[pod] != on {
			t.Errorf("member %s on node %s, its volume on %q", pod, on, volumes[pod])
		}
	}
	t.Logf("three nodes drained in turn in %s; member counts seen %v; members now on %v", took.Round(time.Second), members.sizes, pods)
	cell.finish(t, "every node drained in turn", took)
}

// The same for a Redis cluster: the drain cordons the primary's node, and
// the operator hands the primary over to a replica in sync on another
// node before the drain, which the primary's budget holds until then,
// evicts its pod: no pod is ever evicted while labelled primary.
func TestNodesRedisDrainEachNodeInTurnHandsThePrimaryOverFirst(t *testing.T) {
	c, r := startNodesRedisCell(t, "drain")
	ns := r.rec.Namespace
	w := r.startWriter("drain")
	waitWrites(t, w, 200)
	evicted := watchEvictedPrimaries(t, c, ns, redisenterprisecluster.Selector(r.rec.Name))
	start := time.Now()
	drainEach(t, c, ns, redisenterprisecluster.Selector(r.rec.Name), 3, func() { r.waitRunning(8 * time.Minute) })
	took := time.Since(start)
	primaries := evicted()
	acked, lost := r.finish(w, "every node drained in turn", took)
	if len(primaries) > 0 {
		t.Errorf("pods evicted while labelled primary: %v, want none (handed over first)", primaries)
	}
	t.Logf("three nodes drained in turn in %s; %d writes acknowledged, %d lost, longest gap %s; events %v", took.Round(time.Second), acked, lost,
		w.LongestGap().Round(100*time.Millisecond), r.readyEventReasons())
}

// watchEvictedPrimaries watches the pods of selector in namespace until
// the returned function is called, which returns the pods it saw
// terminating while labelled primary. A terminating pod keeps its labels:
// the operator labels no pod that is going.
func watchEvictedPrimaries(t *testing.T, c client.Client, namespace string, selector map[string]string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list corev1.PodList
			if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(selector)); err == nil {
				mu.Lock()
				for _, p := range list.Items {
					if p.DeletionTimestamp != nil && p.Labels[redisenterprisecluster.RoleLabel] == redisv1alpha1.RolePrimary {
						seen[p.Name+" "+string(p.UID)] = true
					}
				}
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	stop := func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(seen))
	}
	t.Cleanup(func() { stop() })
	return stop
}

// stopNode stops node; the returned function starts it again, and is
// also run at the test's end if the test has not run it.
func stopNode(t *testing.T, node string) (startAgain func()) {
	t.Helper()
	if err := testCluster.StopNode(node); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	startAgain = func() {
		once.Do(func() {
			if err := testCluster.StartNode(context.Background(), node); err != nil {
				t.Errorf("start node %s again: %v", node, err)
			}
		})
	}
	t.Cleanup(startAgain)
	return startAgain
}

// partition cuts node's pods off from the other nodes' pods; the returned
// heal is also run at the test's end if the test has not run it.
func partition(t *testing.T, node string) (heal func()) {
	t.Helper()
	undo, err := testCluster.PartitionNode(node)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	heal = func() {
		once.Do(func() {
			if err := undo(); err != nil {
				t.Errorf("heal the partition of node %s: %v", node, err)
			}
		})
	}
	t.Cleanup(heal)
	return heal
}

// The leader's node cut off from the other nodes (its pods from theirs,
// both ways) while the operator and the clients on the host still reach
// every pod: the other two members elect a leader and keep the quorum;
// the status names the member cut off, and nothing is replaced (its node
// is there). Healed, the member catches up: Ready, the same members.
func TestNodesEtcdLeaderNodeCutOffFromTheOthersReplacesNothing(t *testing.T) {
	needNodes(t, 3)
	c, e := runEtcdSample(t, "partition", etcdVersion)
	etcdLeaderNodeCut(t, c, e, func(node string) func() { return partition(t, node) },
		etcdv1beta2.ReasonMemberUnhealthy, "the leader's node cut off from the other nodes")
}

// etcdLeaderNodeCut cuts the leader's node off with cut (which returns the
// heal) for 30 s: the status says reason naming the leader, and no member
// changes; healed, the cluster is Ready with the same members.
func etcdLeaderNodeCut(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, cut func(node string) (heal func()), reason, fault string) {
	t.Helper()
	cell := watchEtcdCell(t, c, e)
	ids := etcdMemberIDs(e)
	victim := e.Status.Leader
	pods, _ := podNodes(t, c, e)
	heal := cut(pods[victim])
	cond := waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, reason, 2*time.Minute)
	if !strings.Contains(cond.Message, victim) {
		t.Errorf("Ready=False %s: %q, want the member named (%s)", cond.Reason, cond.Message, victim)
	}
	holdMembers(t, c, e, ids, 30*time.Second, func(ready *metav1.Condition) bool {
		return ready != nil && ready.Status == metav1.ConditionFalse
	})
	heal()
	healed := time.Now()
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	toReady := time.Since(healed)
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after the heal, want %v kept", got, ids)
	}
	t.Logf("leader %s's node %s: %s for 30 s: %s; Ready %s after the heal", victim, pods[victim], fault, cond.Message, toReady.Round(100*time.Millisecond))
	cell.finish(t, fault, toReady)
}

// The primary's node cut off from the other nodes while the operator and
// the clients still reach it: no write that waits for a replica is
// acknowledged, the status says no replica is in sync, and nothing fails
// over (the primary answers as one). Healed, the replicas catch up: Running
// with the same primary, no acknowledged write lost.
func TestNodesRedisPrimaryNodeCutOffFromTheOthersFailsNothingOver(t *testing.T) {
	c, r := startNodesRedisCell(t, "partition")
	ns := r.rec.Namespace
	primary := r.rec.Status.Primary
	node, _ := podNodeOf(t, c, ns, primary)
	w := r.startWriter("partition")
	waitWrites(t, w, 200)
	heal := partition(t, node)
	// A write in flight as the cut starts may still be acknowledged:
	// count from the first write that fails.
	waitWriteFails(t, w)
	before := w.Acked()
	reasons := r.readyReasons(30*time.Second, primary)
	during := w.Acked() - before
	heal()
	healed := time.Now()
	if during > 0 {
		t.Errorf("%d writes acknowledged by WAIT 1 with the primary's node cut off from the others", during)
	}
	checkSaysSo(t, reasons, redisv1alpha1.ReasonNoReplicaInSync)
	if got := r.waitRunning(3 * time.Minute); got != primary {
		t.Errorf("primary %s after the cut, want %s kept", got, primary)
	}
	toReady := time.Since(healed)
	acked, lost := r.finish(w, "the primary's node cut off from the other nodes for 30 s", toReady)
	t.Logf("%s's node %s cut off for 30 s: Ready reasons %v; Running %s after the heal; %d acknowledged (WAIT 1), %d lost, longest gap %s",
		primary, node, reasons, toReady.Round(100*time.Millisecond), acked, lost, w.LongestGap().Round(100*time.Millisecond))
}

// The other way round from the cut above: the operator alone cut off from
// the primary's node (its packets to the node's pods dropped by its uid),
// while the nodes, the clients and the kubelets still reach one another.
// The replicas still stream from the primary: nothing fails over, the
// status says the primary is out of the operator's reach, and no write is
// lost. Healed: Running, the same primary.
func TestNodesRedisOperatorCutOffFromThePrimarysNodeFailsNothingOver(t *testing.T) {
	needNodes(t, 3)
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperatorAsItsUID(t, ns, "--redis-failover-after="+cellFailoverAfter.String())
	r := newRedisCell(t, c, ns, "operator-cut", true, 3)
	primary := r.rec.Status.Primary
	node, _ := podNodeOf(t, c, ns, primary)
	subnet, err := testCluster.NodePodSubnet(node)
	if err != nil {
		t.Fatal(err)
	}
	w := r.startWriter("operator-cut")
	waitWrites(t, w, 200)
	heal := cutOperatorFrom(t, subnet)
	reasons := r.readyReasons(30*time.Second, primary)
	heal()
	healed := time.Now()
	checkSaysSo(t, reasons, redisv1alpha1.ReasonPrimaryUnreachable)
	if got := r.waitRunning(3 * time.Minute); got != primary {
		t.Errorf("primary %s after the cut, want %s kept", got, primary)
	}
	toReady := time.Since(healed)
	acked, lost := r.finish(w, "the operator alone cut off from the primary's node for 30 s", toReady)
	t.Logf("the operator cut off from %s's node %s (%s) for 30 s: Ready reasons %v; Running %s after the heal; %d acknowledged (WAIT 1), %d lost, longest gap %s",
		primary, node, subnet, reasons, toReady.Round(100*time.Millisecond), acked, lost, w.LongestGap().Round(100*time.Millisecond))
}

// The operator alone cut off from the etcd leader's node (its packets to
// the node's pods dropped by its uid), while the members and the clients
// still reach one another: the members keep their leader and their
// quorum; the status says the operator cannot reach the member, and
// nothing is replaced. Healed: Ready, the same members.
func TestNodesEtcdOperatorCutOffFromTheLeadersNodeReplacesNothing(t *testing.T) {
	needNodes(t, 3)
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperatorAsItsUID(t, ns)
	e := createEtcdSample(t, c, ns, "operator-cut", etcdVersion)
	etcdLeaderNodeCut(t, c, e, func(node string) func() {
		subnet, err := testCluster.NodePodSubnet(node)
		if err != nil {
			t.Fatal(err)
		}
		return cutOperatorFrom(t, subnet)
	}, etcdv1beta2.ReasonMembersUnreachable, "the operator alone cut off from the leader's node")
}
