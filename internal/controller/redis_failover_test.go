package controller_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// failoverWindow is the failover window of these tests.
const failoverWindow = 30 * time.Second

// redisFixture is a RedisEnterpriseCluster "r" of three nodes whose pods
// exist and are ready (r-0 labelled primary and recorded as the primary),
// driven by a reconciler whose Redis is fake and whose clock the test
// moves.
type redisFixture struct {
	t     *testing.T
	obj   *redisv1alpha1.RedisEnterpriseCluster
	redis *controller.FakeRedis
	clock *clocktesting.FakeClock
	r     interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}
}

func podIP(i int) string { return fmt.Sprintf("10.9.0.%d", i+1) }

// nodeOf is the Kubernetes node the fixture's pod i is bound to (no Node
// of that name exists unless a test makes one).
func nodeOf(namespace string, i int) string { return fmt.Sprintf("%s-node-%d", namespace, i) }

func nodeAddr(i int) string { return redisnode.Addr(podIP(i), redisenterprisecluster.Port) }

func newRedisFixture(t *testing.T, nodes map[int]*controller.FakeRedisNode) *redisFixture {
	t.Helper()
	return newRedisFixtureOf(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}, nodes)
}

// newRedisFixtureOf is newRedisFixture for a cluster of spec.
func newRedisFixtureOf(t *testing.T, spec redisv1alpha1.RedisEnterpriseClusterSpec, nodes map[int]*controller.FakeRedisNode) *redisFixture {
	t.Helper()
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	f := &redisFixture{t: t, redis: &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, clock: clocktesting.NewFakeClock(time.Now())}
	for i, n := range nodes {
		f.redis.Nodes[nodeAddr(i)] = n
	}
	f.r = controller.NewRedisReconciler(k8s, f.redis, f.clock, failoverWindow)
	f.obj = &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: spec}
	testenv.Create(t, k8s, f.obj)
	_ = f.pass()
	// No controller makes the namespace's ServiceAccount here.
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	for i := range 3 {
		role := redisv1alpha1.RoleReplica
		if i == 0 {
			role = redisv1alpha1.RolePrimary
		}
		labels := redisenterprisecluster.Selector("r")
		labels[redisenterprisecluster.RoleLabel] = role
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: redisenterprisecluster.PodName("r", i), Labels: labels},
			Spec:       corev1.PodSpec{NodeName: nodeOf(ns, i), Containers: []corev1.Container{{Name: "redis", Image: "redis"}}},
		}
		testenv.Create(t, k8s, pod)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP(i), PodIPs: []corev1.PodIP{{IP: podIP(i)}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	get(t, f.obj)
	f.obj.Status.Primary = "r-0"
	if err := k8s.Status().Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	return f
}

// pass runs one reconcile pass and returns its error.
func (f *redisFixture) pass() error {
	f.t.Helper()
	_, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	get(f.t, f.obj)
	return err
}

func (f *redisFixture) mustPass() {
	f.t.Helper()
	if err := f.pass(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *redisFixture) readyReason() string {
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready); c != nil {
		return c.Reason
	}
	return ""
}

// run brings the fixture's cluster to Running.
func (f *redisFixture) run() {
	f.t.Helper()
	f.mustPass()
	f.settle()
	f.mustPass()
	if f.obj.Status.State != redisv1alpha1.StateRunning {
		f.t.Fatalf("state %s (%s), want Running", f.obj.Status.State, f.readyMessage())
	}
}

func (f *redisFixture) readyMessage() string {
	if c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready); c != nil {
		return c.Reason + ": " + c.Message
	}
	return ""
}

func (f *redisFixture) roleLabel(i int) string {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}}
	get(f.t, pod)
	return pod.Labels[redisenterprisecluster.RoleLabel]
}

func (f *redisFixture) setPodReady(i int, ready corev1.ConditionStatus) {
	f.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}}
	get(f.t, pod)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		f.t.Fatal(err)
	}
}

func replicaOf(host string, offset int64, streaming bool) *controller.FakeRedisNode {
	n := &controller.FakeRedisNode{Info: redisnode.Info{PrimaryHost: host, Offset: offset, LastIO: -1}}
	if streaming {
		n.Info.LinkUp, n.Info.LastIO = true, time.Second
	}
	return n
}

const r0Host = "r-0.r-nodes"

// A primary that restarted answers as a replica of no one: it takes no
// write, so the failover is at once: its pod loses the primary's label, the
// replica furthest along is promoted and labelled, and every other node,
// the old primary included, is pointed at it in the same pass.
func TestRedisFailoverFromAPrimaryThatRestartedIsAtOnceAndRepointsEveryNode(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.mustPass()
	if f.obj.Status.Primary != "r-2" {
		t.Fatalf("primary %s after one pass, want r-2 (the furthest along)", f.obj.Status.Primary)
	}
	want := []string{"promote " + nodeAddr(2), "follow " + nodeAddr(1) + " r-2.r-nodes", "follow " + nodeAddr(0) + " r-2.r-nodes"}
	if !slices.Equal(f.redis.Calls, want) {
		t.Errorf("calls %v, want %v", f.redis.Calls, want)
	}
	if f.roleLabel(0) != redisv1alpha1.RoleReplica || f.roleLabel(2) != redisv1alpha1.RolePrimary {
		t.Errorf("role labels r-0 %s, r-2 %s; want replica and primary", f.roleLabel(0), f.roleLabel(2))
	}
}

// The operator stops inside a failover, after the step's claim named the
// node to promote and before the node was promoted (the pass's context
// cancelled, as a rollout's SIGTERM does): the claim is taken back all the
// same, so that the status never names a primary the step did not make.
func TestRedisAStepCancelledMidwayTakesItsClaimBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	target := replicaOf(r0Host, 95, false)
	target.OnPromote = cancel
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: target,
	})
	_, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	if err == nil {
		t.Fatal("the pass whose promotion failed returned no error")
	}
	get(t, f.obj)
	if f.obj.Status.Primary != "r-0" {
		t.Errorf("status.primary %q after the cancelled failover, want r-0 taken back (r-2 was never promoted)", f.obj.Status.Primary)
	}
	if h := f.obj.Status.PrimaryHistory; len(h) != 0 {
		t.Errorf("primaryHistory %+v after the cancelled failover, want the claimed change taken back", h)
	}
}

// The operator alone cannot reach the primary while its replicas still
// stream from it: however long that lasts, nothing fails over, and the
// status says why.
func TestRedisNoFailoverWhileAReplicaStreamsFromThePrimary(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Silent: true}, 1: replicaOf(r0Host, 90, true), 2: replicaOf(r0Host, 95, true),
	})
	for range 3 {
		f.mustPass()
		f.clock.Step(10 * failoverWindow)
	}
	if f.obj.Status.Primary != "r-0" || len(f.redis.CallsMatching("promote")) > 0 {
		t.Errorf("primary %s, calls %v; want r-0 kept and no promotion", f.obj.Status.Primary, f.redis.Calls)
	}
	if got := f.readyReason(); got != redisv1alpha1.ReasonPrimaryUnreachable {
		t.Errorf("Ready reason %s, want %s", got, redisv1alpha1.ReasonPrimaryUnreachable)
	}
}

// A primary that does not answer and that no replica hears from is failed
// over only once it has been down for the window.
func TestRedisFailoverWaitsForTheWindow(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Silent: true}, 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.mustPass()
	f.clock.Step(failoverWindow / 2)
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || len(f.redis.Calls) > 0 || f.readyReason() != redisv1alpha1.ReasonFailoverPending {
		t.Fatalf("half the window: primary %s, calls %v, reason %s; want r-0, none, %s",
			f.obj.Status.Primary, f.redis.Calls, f.readyReason(), redisv1alpha1.ReasonFailoverPending)
	}
	f.clock.Step(failoverWindow / 2)
	f.mustPass()
	if f.obj.Status.Primary != "r-2" || f.roleLabel(0) != redisv1alpha1.RoleReplica {
		t.Errorf("after the window: primary %s, r-0 labelled %s; want r-2, and r-0 a replica", f.obj.Status.Primary, f.roleLabel(0))
	}
	f.wantPrimaryHistory(redisv1alpha1.PrimaryChange{From: "r-0", To: "r-2", Reason: redisv1alpha1.PrimaryChangeFailover})
}

// wantPrimaryHistory checks status.primaryHistory against want, newest
// first, each change made at the fixture's clock's time or before.
func (f *redisFixture) wantPrimaryHistory(want ...redisv1alpha1.PrimaryChange) {
	f.t.Helper()
	got := f.obj.Status.PrimaryHistory
	if len(got) != len(want) {
		f.t.Fatalf("primaryHistory %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].From != want[i].From || got[i].To != want[i].To || got[i].Reason != want[i].Reason ||
			got[i].Time.IsZero() || got[i].Time.After(f.clock.Now()) {
			f.t.Errorf("primaryHistory[%d] %+v, want %s -> %s (%s) at a time no later than %s", i, got[i], want[i].From, want[i].To, want[i].Reason, f.clock.Now())
		}
	}
}

// The window starts when the replicas last heard from the silent primary
// (their links up, it pings them every second), not at the operator's first
// look: a cluster looked at every 10 s at rest fails over a window after its
// primary went silent. One look is not a verdict: the failover waits for a
// second look, a second later.
func TestRedisFailoverWindowCountsFromWhenTheReplicasLastHeardFromThePrimary(t *testing.T) {
	unheard := func(offset int64) *controller.FakeRedisNode {
		return &controller.FakeRedisNode{Info: redisnode.Info{PrimaryHost: r0Host, Offset: offset, LinkUp: true, LastIO: failoverWindow + 2*time.Second}}
	}
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: {Silent: true}, 1: unheard(90), 2: unheard(95)})
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || len(f.redis.CallsMatching("promote")) > 0 || f.readyReason() != redisv1alpha1.ReasonFailoverPending {
		t.Fatalf("first look: primary %s, calls %v, reason %s; want r-0, no promotion, %s",
			f.obj.Status.Primary, f.redis.Calls, f.readyReason(), redisv1alpha1.ReasonFailoverPending)
	}
	f.clock.Step(time.Second)
	f.mustPass()
	if f.obj.Status.Primary != "r-2" {
		t.Errorf("second look, the replicas unheard from r-0 for longer than the window: primary %s, want r-2", f.obj.Status.Primary)
	}
}

// A primary that still answers, though its pod is not ready, is paused and
// made a replica before another node is promoted; one that cannot be made a
// replica stops the failover.
func TestRedisFailoverFencesAReachablePrimaryFirst(t *testing.T) {
	for _, refuses := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuses REPLICAOF %v", refuses), func(t *testing.T) {
			primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 100}, FailFollow: refuses}
			f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
				0: primary, 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
			})
			f.setPodReady(0, corev1.ConditionFalse)
			f.mustPass()
			f.clock.Step(failoverWindow)
			err := f.pass()
			if refuses {
				if err == nil || len(f.redis.CallsMatching("promote")) > 0 || f.obj.Status.Primary != "r-0" {
					t.Errorf("error %v, calls %v, primary %s; want an error, no promotion, r-0 kept", err, f.redis.Calls, f.obj.Status.Primary)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"pause " + nodeAddr(0), "follow " + nodeAddr(0) + " r-2.r-nodes", "unpause " + nodeAddr(0), "promote " + nodeAddr(2)}
			if len(f.redis.Calls) < len(want) || !slices.Equal(f.redis.Calls[:len(want)], want) {
				t.Errorf("calls %v, want them to start %v", f.redis.Calls, want)
			}
		})
	}
}

// A child the API server refuses (persistence turned on for a running
// cluster: a StatefulSet's claim templates cannot change) is reported, and
// does not hold back a failover.
func TestRedisFailoverRunsWhileAChildIsRefused(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.obj.Spec.PersistentSpec = &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: true}}
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
	_ = f.pass()
	if f.readyReason() != conditions.ReasonApplyRejected || f.obj.Status.Primary != "r-2" {
		t.Errorf("Ready reason %s, primary %s; want %s and the failover to r-2 made", f.readyReason(), f.obj.Status.Primary, conditions.ReasonApplyRejected)
	}
}

// staleClient answers every read of one RedisEnterpriseCluster with the
// copy it holds, as the cache of a second manager that has not seen the
// first one's writes yet would.
type staleClient struct {
	client.Client
	stale *redisv1alpha1.RedisEnterpriseCluster
}

func (c staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if o, ok := obj.(*redisv1alpha1.RedisEnterpriseCluster); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(o)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// Two managers without leader election decide a failover from the same
// version of the resource, each from its own look at the nodes (the second
// sees r-1 further along). The first to act claims the new primary in the
// status; the second's claim is refused, and it touches no node and no
// label: one primary, not two.
func TestRedisTwoManagersDecidingFromOneVersionPromoteOnce(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	stale := f.obj.DeepCopy()
	second := &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{
		nodeAddr(0): replicaOf("127.0.0.1", 0, false), nodeAddr(1): replicaOf(r0Host, 99, false), nodeAddr(2): replicaOf(r0Host, 95, false),
	}}
	other := controller.NewRedisReconciler(staleClient{Client: k8s, stale: stale}, second, f.clock, failoverWindow)

	f.mustPass()
	if f.obj.Status.Primary != "r-2" {
		t.Fatalf("primary %s after the first manager's pass, want r-2", f.obj.Status.Primary)
	}
	_, err := other.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	if err == nil {
		t.Error("the second manager's pass, decided from a version the first had changed, succeeded")
	}
	if len(second.Calls) > 0 {
		t.Errorf("the second manager acted on the nodes: %v", second.Calls)
	}
	get(t, f.obj)
	if f.obj.Status.Primary != "r-2" || f.roleLabel(1) == redisv1alpha1.RolePrimary {
		t.Errorf("primary %s, r-1 labelled %s; want r-2 kept, r-1 not a primary", f.obj.Status.Primary, f.roleLabel(1))
	}
}

// A primary that answers BUSY runs a script past Redis's busy threshold:
// it is sent SCRIPT KILL, with the status saying why, and once the script
// is killed it is the primary again, with no failover.
func TestRedisABusyPrimaryHasItsScriptKilledRatherThanBeingFailedOver(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Busy: true, Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 100, false), 2: replicaOf(r0Host, 100, false),
	})
	f.mustPass()
	if got := f.redis.CallsMatching("killscript"); !slices.Equal(got, []string{"killscript " + nodeAddr(0)}) {
		t.Fatalf("calls %v, want SCRIPT KILL sent to r-0", f.redis.Calls)
	}
	if f.readyReason() != redisv1alpha1.ReasonPrimaryBusy {
		t.Errorf("Ready reason %s, want %s", f.readyReason(), redisv1alpha1.ReasonPrimaryBusy)
	}
	f.clock.Step(failoverWindow)
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || len(f.redis.CallsMatching("promote")) > 0 {
		t.Errorf("primary %s, calls %v; want r-0 kept and no promotion", f.obj.Status.Primary, f.redis.Calls)
	}
}

// A busy primary whose script wrote cannot be killed: it is failed over
// once it has been down for the window, and fenced into a replica once its
// script ends and it answers again.
func TestRedisABusyPrimaryWhoseScriptWroteIsFailedOverThenFenced(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Busy: true, Unkillable: true, Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.mustPass()
	if f.readyReason() != redisv1alpha1.ReasonPrimaryBusy || f.obj.Status.Primary != "r-0" {
		t.Fatalf("Ready reason %s, primary %s; want %s and r-0 kept within the window", f.readyReason(), f.obj.Status.Primary, redisv1alpha1.ReasonPrimaryBusy)
	}
	f.clock.Step(failoverWindow)
	f.mustPass()
	if f.obj.Status.Primary != "r-2" || f.roleLabel(0) != redisv1alpha1.RoleReplica {
		t.Fatalf("after the window: primary %s, r-0 labelled %s; want r-2, and r-0 a replica", f.obj.Status.Primary, f.roleLabel(0))
	}
	f.redis.SetBusy(nodeAddr(0), false)
	f.mustPass()
	if got := f.redis.CallsMatching("follow " + nodeAddr(0)); len(got) == 0 {
		t.Errorf("calls %v; want r-0, answering again as a primary, pointed at r-2", f.redis.Calls)
	}
}

// A primary first seen busy after the window (it was silent before Redis
// started answering BUSY) is failed over, and the fence kills its script
// so as to pause it and make it a replica before the promotion.
func TestRedisAFailoverKillsTheScriptOfABusyPrimaryToFenceIt(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Silent: true, Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.mustPass()
	f.clock.Step(failoverWindow)
	f.redis.Nodes[nodeAddr(0)].Silent, f.redis.Nodes[nodeAddr(0)].Busy = false, true
	f.mustPass()
	want := []string{"killscript " + nodeAddr(0), "pause " + nodeAddr(0), "follow " + nodeAddr(0) + " r-2.r-nodes", "unpause " + nodeAddr(0), "promote " + nodeAddr(2)}
	if len(f.redis.Calls) < len(want) || !slices.Equal(f.redis.Calls[:len(want)], want) {
		t.Errorf("calls %v, want them to start %v", f.redis.Calls, want)
	}
}

// A replica that hears from its primary but that the primary has not
// heard from for longer than a few seconds (after a cut heals, each way of
// the link resumes on its own) is behind: WAIT does not count it.
func TestRedisAReplicaThePrimaryHasNotHeardFromIsBehind(t *testing.T) {
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 100,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 20 * time.Second}}}
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	// No StatefulSet controller runs here: say it has seen the spec.
	f.mustPass()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r"}}
	get(t, sts)
	sts.Status.ObservedGeneration = sts.Generation
	if err := k8s.Status().Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	if f.readyReason() != redisv1alpha1.ReasonReplicaBehind {
		t.Errorf("Ready reason %s, want %s", f.readyReason(), redisv1alpha1.ReasonReplicaBehind)
	}
	for _, n := range f.obj.Status.Nodes {
		if want := n.Name != "r-2"; n.Healthy != want {
			t.Errorf("node %s healthy %v, want %v", n.Name, n.Healthy, want)
		}
	}
}

// listed is what a primary says of its replicas r-1 and r-2: both
// acknowledged its stream lately, and announced the Redis port.
func listed() redisnode.Info {
	return redisnode.Info{ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0},
		ReplicaPorts: map[string]int{podIP(1): redisenterprisecluster.Port, podIP(2): redisenterprisecluster.Port}}
}

// primaryOf is a primary at offset whose replicas are listed.
func primaryOf(offset int64) *controller.FakeRedisNode {
	info := listed()
	info.Primary, info.Offset = true, offset
	return &controller.FakeRedisNode{Info: info}
}

// A rolling update replaces the primary's pod last, after a handover in
// one pass: the old primary fails over (FAILOVER TO) to the current
// replica furthest along, named as the old primary lists it (pod IP and
// Redis port): it pauses writes until that replica has caught up, then
// follows it, and the replica takes over. The other replica is pointed at
// the new primary, and the role labels move. The old primary follows the
// new one by its IP, which the next pass recognises: it is a replica in
// sync, not one astray to be pointed again, and its pod, on the old
// template, is the next to go.
func TestRedisRollingUpdateHandsThePrimaryOverBeforeItsPodGoes(t *testing.T) {
	primary := primaryOf(100)
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	f.mustPass()
	f.rollAllButThePrimary()
	f.mustPass()
	want := []string{"failover " + nodeAddr(0) + " " + nodeAddr(1), "follow " + nodeAddr(2) + " r-1.r-nodes"}
	if !slices.Equal(f.redis.Calls, want) {
		t.Errorf("calls %v, want %v", f.redis.Calls, want)
	}
	if f.obj.Status.Primary != "r-1" || f.roleLabel(0) != redisv1alpha1.RoleReplica || f.roleLabel(1) != redisv1alpha1.RolePrimary {
		t.Errorf("primary %s, labels r-0 %s, r-1 %s; want r-1, replica, primary", f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(1))
	}
	if got := f.redis.Nodes[nodeAddr(0)].Info; got.Primary || got.PrimaryHost != podIP(1) {
		t.Fatalf("r-0 after the handover: primary %v, following %q; want a replica of %s", got.Primary, got.PrimaryHost, podIP(1))
	}
	f.wantPrimaryHistory(redisv1alpha1.PrimaryChange{From: "r-0", To: "r-1", Reason: redisv1alpha1.PrimaryChangeHandover})

	// The new primary hears from both replicas.
	f.redis.Nodes[nodeAddr(1)].Info.ReplicaLag = map[string]time.Duration{podIP(0): 0, podIP(2): 0}
	f.mustPass()
	if got := f.redis.CallsMatching("follow " + nodeAddr(0)); len(got) > 0 {
		t.Errorf("r-0, following r-1 by its IP, was pointed at it again: %v", got)
	}
	for _, n := range f.obj.Status.Nodes {
		if n.Name == "r-0" && (n.Role != redisv1alpha1.RoleReplica || !n.Healthy) {
			t.Errorf("r-0 in status.nodes: %+v, want a healthy replica of r-1", n)
		}
	}
	// The pod is evicted, as a drain's are: while its budget allows no
	// disruption (no disruption controller runs here to count the ready
	// pods), it stays, and the cluster says what it waits for.
	if f.podGoing(0) {
		t.Fatal("r-0's pod was deleted while its PodDisruptionBudget allowed no disruption")
	}
	if !f.saysSomewhere("PodDisruptionBudget allows no disruption now") {
		t.Errorf("conditions %+v, want one saying the budget allows no disruption", f.obj.Status.Conditions)
	}
	f.allowDisruptions()
	f.mustPass()
	if !f.podGoing(0) {
		t.Errorf("r-0's pod, on the old template, not evicted after the handover (calls %v)", f.redis.Calls)
	}
}

// allowDisruptions says, as the disruption controller would of every pod
// ready, that each PodDisruptionBudget of the cluster allows one
// disruption.
func (f *redisFixture) allowDisruptions() {
	f.t.Helper()
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := k8s.List(context.Background(), pdbs, client.InNamespace(f.obj.Namespace)); err != nil {
		f.t.Fatal(err)
	}
	for _, pdb := range pdbs.Items {
		want := int32(pdb.Spec.MinAvailable.IntValue())
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1,
			CurrentHealthy: want + 1, DesiredHealthy: want, ExpectedPods: want + 1}
		if err := k8s.Status().Update(context.Background(), &pdb); err != nil {
			f.t.Fatal(err)
		}
	}
}

// saysSomewhere reports whether a condition's message holds text.
func (f *redisFixture) saysSomewhere(text string) bool {
	return slices.ContainsFunc(f.obj.Status.Conditions, func(c metav1.Condition) bool { return strings.Contains(c.Message, text) })
}

// rollAllButThePrimary says, as no StatefulSet controller runs here, that
// the StatefulSet's controller has taken its spec, and that r-0 alone
// still runs the old template.
func (f *redisFixture) rollAllButThePrimary() {
	f.t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r"}}
	get(f.t, sts)
	sts.Status.ObservedGeneration, sts.Status.UpdateRevision = sts.Generation, "new"
	if err := k8s.Status().Update(context.Background(), sts); err != nil {
		f.t.Fatal(err)
	}
	for i, revision := range []string{"old", "new", "new"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}}
		get(f.t, pod)
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
		if err := k8s.Update(context.Background(), pod); err != nil {
			f.t.Fatal(err)
		}
	}
}

// podGoing reports whether pod i was deleted: it is gone, or terminating.
func (f *redisFixture) podGoing(i int) bool {
	f.t.Helper()
	pod := &corev1.Pod{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}, pod)
	if client.IgnoreNotFound(err) != nil {
		f.t.Fatal(err)
	}
	return err != nil || !pod.DeletionTimestamp.IsZero()
}

// serveTLS makes the pods of the nodes given again, as from a template
// with spec.tls: they mount the certificate (the volume "tls"), and so
// serve TLS alone.
func (f *redisFixture) serveTLS(nodes ...int) {
	f.t.Helper()
	ctx := context.Background()
	for _, i := range nodes {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}}
		get(f.t, pod)
		if err := k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			f.t.Fatal(err)
		}
		again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels},
			Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: []corev1.Container{{Name: "redis", Image: "redis"}},
				Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "r-tls"}}}}}}
		testenv.Create(f.t, k8s, again)
		again.Status = pod.Status
		if err := k8s.Status().Update(ctx, again); err != nil {
			f.t.Fatal(err)
		}
	}
}

// nodes makes the Kubernetes nodes of the fixture's pods and returns a
// function that cordons node i.
func (f *redisFixture) nodes() (cordon func(i int)) {
	f.t.Helper()
	ctx := context.Background()
	nodes := make([]*corev1.Node, 3)
	for i := range nodes {
		nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeOf(f.obj.Namespace, i)}}
		testenv.Create(f.t, k8s, nodes[i])
		f.t.Cleanup(func() { _ = k8s.Delete(ctx, nodes[i]) })
	}
	return func(i int) {
		f.t.Helper()
		get(f.t, nodes[i])
		nodes[i].Spec.Unschedulable = true
		if err := k8s.Update(ctx, nodes[i]); err != nil {
			f.t.Fatal(err)
		}
	}
}

// settle says, as no StatefulSet controller runs here, that the
// StatefulSet's controller has seen its spec.
func (f *redisFixture) settle() {
	f.t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r"}}
	get(f.t, sts)
	sts.Status.ObservedGeneration = sts.Generation
	if err := k8s.Status().Update(context.Background(), sts); err != nil {
		f.t.Fatal(err)
	}
}

// A drain begins with a cordon: the primary on the cordoned node is handed
// over to a synced replica on a node that is not, and its pod labelled a
// replica, which lets its disruption budget give it up; a replica's node
// cordoned moves nothing.
func TestRedisPrimaryOnACordonedNodeIsHandedOverToAReplicaOnANodeThatIsNot(t *testing.T) {
	primary := primaryOf(100)
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	cordon := f.nodes()
	f.mustPass()
	f.settle()
	cordon(1)
	f.mustPass()
	if len(f.redis.Calls) != 0 || f.obj.Status.Primary != "r-0" || f.obj.Status.State != redisv1alpha1.StateRunning {
		t.Fatalf("a replica's node stateful.Cordoned: calls %v, primary %s, state %s; want none, r-0, Running", f.redis.Calls, f.obj.Status.Primary, f.obj.Status.State)
	}
	cordon(0)
	f.mustPass()
	want := []string{"failover " + nodeAddr(0) + " " + nodeAddr(2), "follow " + nodeAddr(1) + " r-2.r-nodes"}
	if !slices.Equal(f.redis.Calls, want) {
		t.Errorf("calls %v, want %v", f.redis.Calls, want)
	}
	if f.obj.Status.Primary != "r-2" || f.roleLabel(0) != redisv1alpha1.RoleReplica || f.roleLabel(2) != redisv1alpha1.RolePrimary {
		t.Errorf("primary %s, labels r-0 %s, r-2 %s; want r-2, replica, primary", f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(2))
	}
}

// A drain evicts the replica beside the primary on the cordoned node while
// the primary is handed over: the old primary fails over to the new one,
// which it then follows, but the evicted replica, stopping, refuses to be
// pointed at it. The status keeps the new primary (the step's error is reported), and
// once the evicted replica's pod is gone, the next pass finds the new
// primary healthy and fails nothing over: no wait for the replica that
// cannot come back, with the old primary recorded as one that says it is a
// replica.
func TestRedisHandoverKeepsTheNewPrimaryRecordedWhenAReplicaEvictedMeanwhileCannotBeRepointed(t *testing.T) {
	primary := primaryOf(100)
	evicted := replicaOf(r0Host, 100, true)
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: evicted, 2: replicaOf(r0Host, 100, true)})
	cordon := f.nodes()
	f.mustPass()
	f.settle()
	cordon(1)
	cordon(0)
	evicted.FailFollow = true
	if err := f.pass(); err == nil {
		t.Fatal("the pass succeeded, though the evicted replica refused to follow the new primary")
	}
	if got := f.redis.CallsMatching("failover"); !slices.Equal(got, []string{"failover " + nodeAddr(0) + " " + nodeAddr(2)}) {
		t.Fatalf("calls %v, want r-0 failed over to r-2", f.redis.Calls)
	}
	if f.obj.Status.Primary != "r-2" || f.roleLabel(0) != redisv1alpha1.RoleReplica || f.roleLabel(2) != redisv1alpha1.RolePrimary {
		t.Errorf("after the step's error: primary %s, labels r-0 %s, r-2 %s; want r-2 (the primary, r-0 following it), replica, primary",
			f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(2))
	}

	// The eviction ends: the replica's Redis is gone, and so is its pod
	// (no StatefulSet controller runs here to make it again).
	f.redis.Nodes[nodeAddr(1)].Silent = true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", 1)}}
	if err := k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.mustPass()
	}
	if f.obj.Status.Primary != "r-2" || len(f.redis.CallsMatching("failover")) != 1 || len(f.redis.CallsMatching("promote")) != 0 ||
		f.readyReason() == redisv1alpha1.ReasonNodeSilent {
		t.Errorf("with r-1 gone: primary %s, Ready reason %s, calls %v; want r-2 kept, no failover waiting for r-1, one handover and no promotion",
			f.obj.Status.Primary, f.readyReason(), f.redis.Calls)
	}
}

// A handover whose new primary does not catch up while the old primary's
// writes are paused (FAILOVER's timeout, 5 s) does not happen: Redis
// aborts the failover, and the old primary stays the primary and takes
// writes again. The step fails, saying why; nothing is promoted after the
// pause (a promotion then would discard the writes the old primary
// acknowledged meanwhile, once it followed the new one). The next pass
// decides again, and hands over once the replica keeps up.
func TestRedisHandoverWhoseNewPrimaryDoesNotCatchUpInTimeKeepsTheOldPrimary(t *testing.T) {
	late := replicaOf(r0Host, 100, true)
	// It reaches the primary's offset only as the pause ends.
	late.CatchesUpAfter = 5 * time.Second
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primaryOf(100), 1: late, 2: replicaOf(r0Host, 100, true)})
	cordon := f.nodes()
	f.mustPass()
	f.settle()
	cordon(0)
	err := f.pass()
	if err == nil || !strings.Contains(err.Error(), "did not catch up in time") {
		t.Errorf("error %v, want the handover's, saying r-1 did not catch up in time", err)
	}
	if want := []string{"failover " + nodeAddr(0) + " " + nodeAddr(1)}; !slices.Equal(f.redis.Calls, want) {
		t.Errorf("calls %v, want %v: no promotion, no node pointed elsewhere", f.redis.Calls, want)
	}
	if f.obj.Status.Primary != "r-0" || f.roleLabel(0) != redisv1alpha1.RolePrimary || f.roleLabel(1) != redisv1alpha1.RoleReplica {
		t.Errorf("primary %s, labels r-0 %s, r-1 %s; want r-0 kept, primary, replica", f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(1))
	}
	if !f.redis.Nodes[nodeAddr(0)].Info.Primary || f.redis.Nodes[nodeAddr(1)].Info.Primary {
		t.Errorf("r-0 primary %v, r-1 primary %v; want r-0 alone", f.redis.Nodes[nodeAddr(0)].Info.Primary, f.redis.Nodes[nodeAddr(1)].Info.Primary)
	}
	if !slices.ContainsFunc(f.obj.Status.Conditions, func(c metav1.Condition) bool {
		return strings.Contains(c.Message, "did not catch up in time")
	}) {
		t.Errorf("conditions %+v, want one saying the new primary did not catch up in time", f.obj.Status.Conditions)
	}

	if h := f.obj.Status.PrimaryHistory; len(h) != 0 {
		t.Errorf("primaryHistory %+v after the handover that did not take place, want none", h)
	}

	late.CatchesUpAfter = 0
	f.mustPass()
	if f.obj.Status.Primary != "r-1" || len(f.redis.CallsMatching("failover")) != 2 {
		t.Errorf("once r-1 keeps up: primary %s, calls %v; want r-1 after a second failover", f.obj.Status.Primary, f.redis.Calls)
	}
	f.wantPrimaryHistory(redisv1alpha1.PrimaryChange{From: "r-0", To: "r-1", Reason: redisv1alpha1.PrimaryChangeHandover})
}

// A cluster on its way to TLS hands its primary over last, to a replica
// that serves TLS alone, from an old primary that does not: the old
// primary lists it at port 0 (a node that serves TLS alone and reaches its
// primary in plain text announces no plain port), fails over to it there,
// and makes itself its replica once it has caught up, but can never reach
// it to hand over: the operator promotes it. An old primary that serves
// TLS is told to reach the new one with TLS before it fails over.
func TestRedisHandoverToANodeThatServesTLS(t *testing.T) {
	t.Run("from a primary that does not", func(t *testing.T) {
		primary := primaryOf(100)
		primary.Info.ReplicaPorts = map[string]int{podIP(1): 0, podIP(2): 0}
		f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
		f.serveTLS(1, 2)
		f.mustPass()
		f.rollAllButThePrimary()
		f.mustPass()
		want := []string{"failover " + nodeAddr(0) + " " + redisnode.Addr(podIP(1), 0), "promote " + nodeAddr(1),
			"replicationtls " + nodeAddr(2) + " yes", "follow " + nodeAddr(2) + " r-1.r-nodes"}
		if !slices.Equal(f.redis.Calls, want) {
			t.Errorf("calls %v, want %v", f.redis.Calls, want)
		}
		if f.obj.Status.Primary != "r-1" || f.roleLabel(0) != redisv1alpha1.RoleReplica || f.roleLabel(1) != redisv1alpha1.RolePrimary {
			t.Errorf("primary %s, labels r-0 %s, r-1 %s; want r-1, replica, primary", f.obj.Status.Primary, f.roleLabel(0), f.roleLabel(1))
		}
		// The old primary, following r-1 by its IP but unable to reach it,
		// is not pointed at it again: its pod is made again, with TLS.
		f.redis.Nodes[nodeAddr(1)].Info.ReplicaLag = map[string]time.Duration{podIP(2): 0}
		f.allowDisruptions()
		f.mustPass()
		if got := f.redis.CallsMatching("follow " + nodeAddr(0)); len(got) > 0 || !f.podGoing(0) {
			t.Errorf("calls %v, r-0's pod going %v; want r-0 left alone and its pod made again", f.redis.Calls, f.podGoing(0))
		}
	})
	t.Run("from a primary that does", func(t *testing.T) {
		// Promoted while it reached a primary in plain text, it still
		// would.
		primary := primaryOf(100)
		f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
		f.serveTLS(0, 1, 2)
		f.mustPass()
		f.rollAllButThePrimary()
		f.mustPass()
		want := []string{"replicationtls " + nodeAddr(0) + " yes", "failover " + nodeAddr(0) + " " + nodeAddr(1),
			"replicationtls " + nodeAddr(2) + " yes", "follow " + nodeAddr(2) + " r-1.r-nodes"}
		if !slices.Equal(f.redis.Calls, want) {
			t.Errorf("calls %v, want %v", f.redis.Calls, want)
		}
		if f.obj.Status.Primary != "r-1" || !f.redis.Nodes[nodeAddr(1)].Info.Primary {
			t.Errorf("primary %s, r-1 a primary %v; want r-1", f.obj.Status.Primary, f.redis.Nodes[nodeAddr(1)].Info.Primary)
		}
	})
}

// statusRecorder records every RedisEnterpriseCluster status its client
// writes.
type statusRecorder struct {
	client.Client
	written *[]redisv1alpha1.RedisEnterpriseClusterStatus
}

func (c statusRecorder) Status() client.SubResourceWriter {
	return recordedStatusWriter{SubResourceWriter: c.Client.Status(), written: c.written}
}

type recordedStatusWriter struct {
	client.SubResourceWriter
	written *[]redisv1alpha1.RedisEnterpriseClusterStatus
}

func (w recordedStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if o, ok := obj.(*redisv1alpha1.RedisEnterpriseCluster); ok && err == nil {
		*w.written = append(*w.written, *o.Status.DeepCopy())
	}
	return err
}

// A status left Running from before (the operator was away while the
// primary restarted): the pass that fails over never writes a status that
// says Ready beside a primary its nodes do not show as the healthy
// primary, not even the claim it writes before the step.
func TestRedisStatusNeverSaysReadyBesideAPrimaryItsNodesDoNotShow(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	f.obj.Status.State = redisv1alpha1.StateRunning
	f.obj.Status.Nodes = []redisv1alpha1.NodeStatus{
		{Name: "r-0", Role: redisv1alpha1.RolePrimary, Healthy: true},
		{Name: "r-1", Role: redisv1alpha1.RoleReplica, Healthy: true},
		{Name: "r-2", Role: redisv1alpha1.RoleReplica, Healthy: true},
	}
	meta.SetStatusCondition(&f.obj.Status.Conditions, metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: conditions.ReasonAvailable, Message: "before"})
	if err := k8s.Status().Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
	var written []redisv1alpha1.RedisEnterpriseClusterStatus
	r := controller.NewRedisReconciler(statusRecorder{Client: k8s, written: &written}, f.redis, f.clock, failoverWindow)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)}); err != nil {
		t.Fatal(err)
	}
	if len(written) == 0 {
		t.Fatal("no status written")
	}
	for i, st := range written {
		if !meta.IsStatusConditionTrue(st.Conditions, conditions.Ready) {
			continue
		}
		if !slices.ContainsFunc(st.Nodes, func(n redisv1alpha1.NodeStatus) bool {
			return n.Name == st.Primary && n.Role == redisv1alpha1.RolePrimary && n.Healthy
		}) {
			t.Errorf("status write %d says Ready with primary %s beside nodes %+v", i, st.Primary, st.Nodes)
		}
	}
	if last := written[len(written)-1]; last.Primary != "r-2" {
		t.Errorf("primary %s after the pass, want r-2", last.Primary)
	}
}

// A `<name>-ui` Service applied by an earlier version of the operator,
// which forwarded the primary's Redis port, loses that selector and that
// port at the next pass: it serves the console alone.
func TestRedisUIServiceOfAnEarlierVersionStopsServingRedis(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: primaryOf(100), 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true),
	})
	testenv.Update(t, k8s, f.obj, func(r *redisv1alpha1.RedisEnterpriseCluster) { r.Spec.UIServiceType = corev1.ServiceTypeLoadBalancer })
	ui := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.UIServiceName("r")}}
	get(t, ui)
	old := fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":%q,"namespace":%q,"labels":%s,"ownerReferences":[{"apiVersion":"app.redislabs.com/v1alpha1","kind":"RedisEnterpriseCluster","name":"r","uid":%q,"controller":true,"blockOwnerDeletion":true}]},
		"spec":{"type":"LoadBalancer","selector":{"app-operator/redis-role":"primary","app.kubernetes.io/instance":"r","app.kubernetes.io/name":"redisenterprisecluster"},
		"ports":[{"name":"redis","port":6379,"protocol":"TCP","targetPort":"redis"}]}}`,
		ui.Name, ui.Namespace, mustJSON(t, ui.Labels), f.obj.UID)
	if err := k8s.Patch(context.Background(), ui, client.RawPatch(types.ApplyPatchType, []byte(old)),
		client.FieldOwner(engine.FieldOwner("redisenterprisecluster")), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	if ui.Spec.Selector == nil || ui.Spec.Ports[0].Port != redisenterprisecluster.Port {
		t.Fatalf("the earlier version's ui Service was not applied: %+v", ui.Spec)
	}
	f.mustPass()
	get(t, ui)
	if ui.Spec.Type != corev1.ServiceTypeLoadBalancer || !maps.Equal(ui.Spec.Selector, redisenterprisecluster.ConsoleSelector("r")) ||
		len(ui.Spec.Ports) != 2 || ui.Spec.Ports[0].Port != redisenterprisecluster.UIPort || ui.Spec.Ports[1].Port != redisenterprisecluster.APIPort {
		t.Errorf("ui Service after a pass: %s, selector %v, ports %+v; want a LoadBalancer selecting the console, with ports %d and %d only",
			ui.Spec.Type, ui.Spec.Selector, ui.Spec.Ports, redisenterprisecluster.UIPort, redisenterprisecluster.APIPort)
	}
}
