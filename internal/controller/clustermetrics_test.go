package controller_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// scrape reads reg through its /metrics page, as Prometheus does, and
// returns the series of the families whose names start with prefix, as
// `name{label="value",...}` (labels sorted) to value.
func scrape(t *testing.T, reg *prometheus.Registry, prefix string) map[string]float64 {
	t.Helper()
	families := testenv.MetricFamilies(t, reg)
	out := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			out[name+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// eventsOf drains the events recorded so far, as "Type Reason".
func eventsOf(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			f := strings.Fields(e)
			out = append(out, strings.Join(f[:min(2, len(f))], " "))
		default:
			return out
		}
	}
}

// A Redis cluster's gauges are on the metrics page after a pass: its
// nodes, the healthy ones, whether it has a primary and each replica's
// lag behind the primary's offset. A failover emits a Warning event and
// the gauges follow it; a deleted cluster's gauges are gone.
func TestRedisClusterGaugesAreScrapedAndFollowAFailover(t *testing.T) {
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 1000,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0}}}
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 900, true), 2: replicaOf(r0Host, 1000, true)})
	reg, recorder := prometheus.NewRegistry(), events.NewFakeRecorder(100)
	f.r = controller.NewObservedRedisReconciler(k8s, f.redis, f.clock, failoverWindow, reg, recorder)
	f.mustPass()
	series := func(name, extra string) string {
		return fmt.Sprintf("app_operator_redisenterprisecluster_%s{name=%q,namespace=%q%s}", name, "r", f.obj.Namespace, extra)
	}
	want := map[string]float64{
		series("nodes", ""): 3, series("nodes_healthy", ""): 3, series("has_primary", ""): 1,
		series("replica_lag_bytes", `,replica="r-1"`): 100, series("replica_lag_bytes", `,replica="r-2"`): 0,
	}
	if diff := cmp.Diff(want, scrape(t, reg, "app_operator_redisenterprisecluster_")); diff != "" {
		t.Fatalf("a healthy cluster's metrics (-want +got):\n%s", diff)
	}
	if up := scrape(t, reg, "app_operator_redis_node_up"); len(up) != 3 {
		t.Errorf("node metrics %v, want each of the 3 nodes up", up)
	}
	if got := eventsOf(recorder); slices.Contains(got, "Warning "+redisv1alpha1.EventFailedOver) {
		t.Errorf("events %v before any failover", got)
	}

	// The primary goes silent and no replica hears from it.
	f.redis.Nodes[nodeAddr(0)].Silent = true
	for i := 1; i <= 2; i++ {
		f.redis.Nodes[nodeAddr(i)].Info.LinkUp, f.redis.Nodes[nodeAddr(i)].Info.LastIO = false, -1
	}
	f.mustPass()
	want = map[string]float64{series("nodes", ""): 3, series("nodes_healthy", ""): 0, series("has_primary", ""): 0}
	if diff := cmp.Diff(want, scrape(t, reg, "app_operator_redisenterprisecluster_")); diff != "" {
		t.Errorf("a cluster whose primary is down (-want +got):\n%s", diff)
	}
	f.clock.Step(failoverWindow)
	f.mustPass()
	if f.obj.Status.Primary != "r-2" {
		t.Fatalf("primary %s after the window, want r-2", f.obj.Status.Primary)
	}
	if got, want := eventsOf(recorder), "Warning "+redisv1alpha1.EventFailedOver; !slices.Contains(got, want) {
		t.Errorf("events %v, want %q", got, want)
	}
	f.mustPass()
	if got := scrape(t, reg, "app_operator_")[series("has_primary", "")]; got != 1 {
		t.Errorf("has_primary %v after the failover, want 1", got)
	}

	if err := k8s.Delete(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)}); err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, reg, "app_operator_"); len(got) > 0 {
		t.Errorf("series of a deleted cluster: %v", got)
	}
}

// etcdFixture is an EtcdCluster "e" of spec.size size whose three member
// pods exist, are ready and answer, through a fake etcd, as the healthy
// members of one cluster, e-0 its leader; its reconciler's gauges are in
// reg and its events in recorder.
type etcdFixture struct {
	obj      *etcdv1beta2.EtcdCluster
	fake     *etcd.Fake
	reg      *prometheus.Registry
	recorder *events.FakeRecorder
	pass     func()
}

func newEtcdFixture(t *testing.T, size int32) *etcdFixture {
	t.Helper()
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	f := &etcdFixture{
		obj: &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e"},
			Spec: etcdv1beta2.EtcdClusterSpec{Size: size, Version: "3.6.16"}},
		fake: &etcd.Fake{Endpoints: map[string]*etcd.FakeMember{}},
		reg:  prometheus.NewRegistry(), recorder: events.NewFakeRecorder(100),
	}
	testenv.Create(t, k8s, f.obj)
	members := make([]etcd.Member, 0, 3)
	for i := range 3 {
		name := fmt.Sprintf("e-%d", i)
		members = append(members, etcd.Member{ID: uint64(i + 1), Name: name, PeerURLs: []string{etcdcluster.PeerURL(etcdcluster.HTTP, "e", ns, name)}})
	}
	for i := range 3 {
		name := fmt.Sprintf("e-%d", i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: resources.Labels(etcdcluster.Selector("e"))},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: etcdcluster.ContainerName, Image: f.obj.Spec.Image("3.6.16")}}},
		}
		testenv.Create(t, k8s, pod)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: etcdPodIP(i), PodIPs: []corev1.PodIP{{IP: etcdPodIP(i)}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		f.fake.Endpoints[etcdURL(i)] = &etcd.FakeMember{
			Status:  etcd.Status{ClusterID: 7, MemberID: uint64(i + 1), Leader: 1, Version: "3.6.16"},
			Members: slices.Clone(members),
		}
	}
	r := controller.NewObservedEtcdReconciler(k8s, f.fake.Dial, f.reg, f.recorder)
	f.pass = func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// etcdPodIP is the address of the etcd member pod i.
func etcdPodIP(i int) string { return fmt.Sprintf("10.8.0.%d", i+1) }

// etcdURL is the client URL of the etcd member pod i.
func etcdURL(i int) string { return "http://" + etcdPodIP(i) + ":2379" }

// An etcd cluster's gauges are on the metrics page after a pass: members,
// healthy members, learners, whether it has a leader and its quorum
// margin; a member that stops answering shows at the next pass.
func TestEtcdClusterGaugesAreScraped(t *testing.T) {
	f := newEtcdFixture(t, 3)
	f.pass()
	series := func(name string) string {
		return fmt.Sprintf("app_operator_etcdcluster_%s{name=%q,namespace=%q}", name, "e", f.obj.Namespace)
	}
	gauges := func(members, healthy, learners, leader, margin float64) map[string]float64 {
		return map[string]float64{series("members"): members, series("members_healthy"): healthy, series("learners"): learners,
			series("has_leader"): leader, series("quorum_margin"): margin}
	}
	if diff := cmp.Diff(gauges(3, 3, 0, 1, 1), scrape(t, f.reg, "app_operator_")); diff != "" {
		t.Fatalf("a healthy cluster of three (-want +got):\n%s", diff)
	}

	// e-2 stops answering: one more loss and the quorum is gone.
	delete(f.fake.Endpoints, etcdURL(2))
	f.pass()
	if diff := cmp.Diff(gauges(3, 2, 0, 1, 0), scrape(t, f.reg, "app_operator_")); diff != "" {
		t.Errorf("a cluster of three with a member down (-want +got):\n%s", diff)
	}

	// No member answers: the quorum is that of spec.size.
	clear(f.fake.Endpoints)
	f.pass()
	if diff := cmp.Diff(gauges(0, 0, 0, 0, -2), scrape(t, f.reg, "app_operator_")); diff != "" {
		t.Errorf("a cluster no member of which answers (-want +got):\n%s", diff)
	}
}

// A membership change the operator makes emits a Normal event naming it.
func TestEtcdClusterMembershipChangeEmitsAnEvent(t *testing.T) {
	f := newEtcdFixture(t, 4)
	f.pass()
	if got := eventsOf(f.recorder); !slices.Contains(got, "Normal "+etcdv1beta2.EventLearnerAdded) {
		t.Errorf("events %v after a pass toward a fourth member (calls %v), want %q", got, f.fake.Calls, "Normal "+etcdv1beta2.EventLearnerAdded)
	}
}
