package realpods

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// etcdVersion is the version the sample runs with on the real node: the
// sample's 3.2.13 cannot be built with today's Go, so the node's registry
// has no image of it (see docs/real-pods.md). etcdNextVersion is the
// control plane's etcd (hack/controlplane/go.mod), whose binary is the
// registry's image of the next minor.
const (
	etcdPreviousVersion = "3.6.15"
	etcdVersion         = "3.6.16"
	etcdNextVersion     = "3.7.2"
)

// Bounds of the outcomes the etcd tests wait for: generous, since a read
// or a write on a busy two-core machine can take seconds without the
// cluster having lost anything.
const (
	// quorumlessBound is the longest stretch without a linearizable read
	// served that still counts as a cluster with a quorum.
	quorumlessBound = 10 * time.Second
	// writeBound is how long a write may be retried before it counts as
	// refused.
	writeBound = 30 * time.Second
)

// startEtcdSample runs, in a namespace of its own with its own operator,
// the EtcdCluster sample called name at version, and waits for its three
// members, and their pods, to be Ready.
func startEtcdSample(t *testing.T, name, version string) (client.Client, *etcdv1beta2.EtcdCluster) {
	t.Helper()
	needCluster(t)
	t.Parallel()
	return runEtcdSample(t, name, version)
}

// runEtcdSample is startEtcdSample for a test that runs alone.
func runEtcdSample(t *testing.T, name, version string) (client.Client, *etcdv1beta2.EtcdCluster) {
	t.Helper()
	return runEtcdSampleWith(t, name, version, controller.Options{})
}

// runEtcdSampleWith is runEtcdSample with an operator of options opts.
func runEtcdSampleWith(t *testing.T, name, version string, opts controller.Options) (client.Client, *etcdv1beta2.EtcdCluster) {
	t.Helper()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}, Options: opts})
	return c, createEtcdSample(t, c, ns, name, version)
}

// createEtcdSample creates the sample EtcdCluster as name in namespace ns
// with version, and waits until it is Ready and every member pod is ready.
func createEtcdSample(t *testing.T, c client.Client, ns, name, version string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name = name
	e.Spec.Version = version
	if err := c.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, version, 5*time.Minute)
	waitEtcdPodsReady(t, c, e, 3)
	return e
}

// etcdWatch follows an EtcdCluster's members from the test, through the
// pods' IPs: every poll lists the members and makes one linearizable read,
// which needs a quorum.
type etcdWatch struct {
	stop context.CancelFunc
	done chan struct{}

	mu sync.Mutex
	// polls and quorumless count the polls and those whose read failed;
	// longestQuorumless is the longest time from a failed read to the next
	// read that succeeded: a read that times out on a busy machine is not a
	// lost quorum, a long stretch without any is.
	polls, quorumless int
	longestQuorumless time.Duration
	failingSince      time.Time
	// inFlight is the largest number of members seen at once that were
	// learners or had not started: membership changes in flight.
	inFlight int
	// sizes are the member counts seen, in order, without repeats.
	sizes []int
	errs  []string
}

func watchEtcd(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) *etcdWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &etcdWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.poll(ctx, etcdEndpoints(ctx, c, e))
			time.Sleep(200 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { w.Stop() })
	// The membership before the fault: a fault that heals within one
	// poll would otherwise leave no count at all.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.sizes) > 0, "no member list read yet"
	})
	return w
}

func (w *etcdWatch) poll(ctx context.Context, endpoints []string) {
	if len(endpoints) == 0 {
		return
	}
	// Each member on its own: a learner answers neither the member list
	// nor a linearizable read. The cluster has a quorum when any member
	// serves a linearizable read.
	var list *clientv3.MemberListResponse
	var readErr error
	for _, url := range endpoints {
		cli, err := etcdClient([]string{url})
		if err != nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		if l, err := cli.MemberList(c, clientv3.WithSerializable()); err == nil && list == nil {
			list = l
		}
		_, err = cli.Get(c, "quorum-check")
		cancel()
		cli.Close()
		if readErr = err; err == nil {
			break
		}
	}
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if readErr != nil {
		w.quorumless++
		w.errs = append(w.errs, readErr.Error())
		if w.failingSince.IsZero() {
			w.failingSince = time.Now()
		}
		w.longestQuorumless = max(w.longestQuorumless, time.Since(w.failingSince))
	} else {
		w.failingSince = time.Time{}
	}
	if list == nil {
		return
	}
	changes := 0
	for _, m := range list.Members {
		if m.IsLearner || m.Name == "" {
			changes++
		}
	}
	w.inFlight = max(w.inFlight, changes)
	if n := len(list.Members); len(w.sizes) == 0 || w.sizes[len(w.sizes)-1] != n {
		w.sizes = append(w.sizes, n)
	}
}

// Stop ends the watch.
func (w *etcdWatch) Stop() {
	w.stop()
	<-w.done
}

// etcdEndpoints returns the client URLs of e's running pods.
func etcdEndpoints(ctx context.Context, c client.Client, e *etcdv1beta2.EtcdCluster) []string {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			// A pod that mounts the certificates serves https (and, on
			// the way to TLS, http too).
			scheme := etcdcluster.HTTP
			if p.Labels[etcdcluster.TLSLabel] == "true" {
				scheme = etcdcluster.HTTPS
			}
			out = append(out, string(scheme)+"://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(etcdcluster.ClientPort)))
		}
	}
	return out
}

// etcdClient is a client of endpoints; of https endpoints, with the test
// client's certificate (see testClientTLS).
func etcdClient(endpoints []string) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()}
	if len(endpoints) > 0 && strings.HasPrefix(endpoints[0], "https://") {
		tlsCfg, err := testClientTLS()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tlsCfg
	}
	return clientv3.New(cfg)
}

// waitEtcdReady waits until e is Ready with size members, every one
// healthy, one leader, all at version.
func waitEtcdReady(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, size int, version string, timeout time.Duration) {
	t.Helper()
	testenv.EventuallyInNamespace(t, c, e.Namespace, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), e); err != nil {
			return false, err.Error()
		}
		st := e.Status
		ready := false
		for _, cond := range st.Conditions {
			if cond.Type == conditions.Ready {
				ready = cond.Status == metav1.ConditionTrue
			}
		}
		leaders, healthy := 0, 0
		for _, m := range st.Members {
			if m.Leader {
				leaders++
			}
			if m.Healthy && !m.Learner && m.Version == version {
				healthy++
			}
		}
		ok := ready && len(st.Members) == size && healthy == size && leaders == 1 && st.Leader != "" && st.CurrentVersion == version &&
			st.ObservedGeneration == e.Generation
		return ok, fmt.Sprintf("conditions %+v, members %+v, leader %q, version %q", st.Conditions, st.Members, st.Leader, st.CurrentVersion)
	})
}

// writeKeys writes n keys through cli and returns them.
func writeKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("%s/%03d", prefix, i), fmt.Sprintf("value %d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cli.Put(ctx, k, v)
		cancel()
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		keys[k] = v
	}
	return keys
}

// checkKeys reads every key back through a client of e's pods.
func checkKeys(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, keys map[string]string) {
	t.Helper()
	cli, err := etcdClient(etcdEndpoints(context.Background(), c, e))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for k, v := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Get(ctx, k)
		cancel()
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != v {
			t.Fatalf("get %s: %v (%v), want %q", k, resp, err, v)
		}
	}
}

func setEtcdSpec(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, f func(*etcdv1beta2.EtcdClusterSpec)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), e); err != nil {
			return false, err.Error()
		}
		f(&e.Spec)
		err := c.Update(context.Background(), e)
		return err == nil, fmt.Sprint(err)
	})
}

// The seed's EtcdCluster sample. Unchanged (etcd 3.2.13, below the first
// version the operator manages), it says so. With the
// node's 3.6.16 it reaches Ready with 3 healthy members and one leader,
// and a key written through the client Service reads back. It then grows
// to 5 and shrinks back to 3 with one membership change at a time and a
// quorum throughout, keeping every key; a member whose pod is deleted
// rejoins with its data, one whose claim is deleted is replaced; with two
// of three members stopped it says QuorumLost and changes nothing; and
// with two of three pods deleted it comes back whole.
func TestEtcdClusterSampleRunsScalesHealsAndSaysQuorumLost(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	// The sample unchanged in one namespace, with the node's version in
	// another: both are called example.
	ns2 := testenv.NewNamespace(t, c)
	op := startOperator(t, testenv.StartOptions{Namespaces: []string{ns, ns2}})

	sample := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", sample, ns)
	if err := c.Create(ctx, sample); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, sample, func() []metav1.Condition { return sample.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonVersionUnsupported, 3*time.Minute)
	t.Logf("the sample unchanged: Ready=False %s: %s", cond.Reason, cond.Message)
	if err := c.Get(ctx, client.ObjectKeyFromObject(sample), &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("the sample's StatefulSet: %v, want none created", err)
	}
	if err := c.Delete(ctx, sample); err != nil {
		t.Fatal(err)
	}

	// The sample with the version the node has.
	ns = ns2
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Spec.Version = etcdVersion
	start := time.Now()
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	t.Logf("3 members Ready in %s, leader %s", time.Since(start).Round(time.Second), e.Status.Leader)
	// Its gauges on the metrics page, from the operator's next look.
	waitGauges(t, client.ObjectKeyFromObject(e), map[string]float64{
		"app_operator_etcdcluster_members": 3, "app_operator_etcdcluster_members_healthy": 3, "app_operator_etcdcluster_learners": 0,
		"app_operator_etcdcluster_has_leader": 1, "app_operator_etcdcluster_quorum_margin": 1,
	}, 30*time.Second)
	// etcd's own metrics, where the PodMonitor of
	// config/prometheus/etcd-monitor.yaml scrapes them.
	checkMembersServeMetrics(t, c, e)

	// A key through the client Service's cluster IP (kube-proxy on the node).
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: etcdcluster.ClientServiceName(e.Name)}, svc); err != nil {
		t.Fatal(err)
	}
	viaService, err := etcdClient([]string{"http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(etcdcluster.ClientPort))})
	if err != nil {
		t.Fatal(err)
	}
	defer viaService.Close()
	testenv.Eventually(t, 90*time.Second, func() (bool, string) {
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := viaService.Put(c, "greeting", "hello through the client Service"); err != nil {
			return false, err.Error()
		}
		resp, err := viaService.Get(c, "greeting")
		if err != nil || len(resp.Kvs) != 1 {
			return false, fmt.Sprint(resp, err)
		}
		return string(resp.Kvs[0].Value) == "hello through the client Service", string(resp.Kvs[0].Value)
	})
	keys := writeKeys(t, viaService, "before-scale", 50)
	keys["greeting"] = "hello through the client Service"

	// 3 -> 5 -> 3, watched from the test.
	w := watchEtcd(t, c, e)
	start = time.Now()
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 5 })
	waitEtcdReady(t, c, e, 5, etcdVersion, 6*time.Minute)
	grown := time.Since(start)
	start = time.Now()
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 3 })
	waitEtcdReady(t, c, e, 3, etcdVersion, 4*time.Minute)
	w.Stop()
	checkKeys(t, c, e, keys)
	t.Logf("3 -> 5 in %s, 5 -> 3 in %s; member counts seen %v; %d polls, %d reads failed, longest without one served %s; at most %d change(s) in flight",
		grown.Round(time.Second), time.Since(start).Round(time.Second), w.sizes, w.polls, w.quorumless, w.longestQuorumless.Round(time.Millisecond), w.inFlight)
	if w.inFlight > 1 {
		t.Errorf("%d membership changes were in flight at once, want at most one", w.inFlight)
	}
	waitEventReasons(t, c, "EtcdCluster", client.ObjectKeyFromObject(e),
		etcdv1beta2.EventLearnerAdded, etcdv1beta2.EventLearnerPromoted, etcdv1beta2.EventMemberRemoved)
	if w.longestQuorumless > quorumlessBound {
		t.Errorf("no member served a linearizable read for %s during the scaling (%d of %d reads failed: %q)", w.longestQuorumless, w.quorumless, w.polls, w.errs)
	}
	for i := 1; i < len(w.sizes); i++ {
		if d := w.sizes[i] - w.sizes[i-1]; d > 1 || d < -1 {
			t.Errorf("member counts %v: a jump of %d", w.sizes, d)
		}
	}

	// A member's pod deleted: the StatefulSet brings it back on its claim,
	// and it rejoins with its data as the same member.
	victim := etcdcluster.MemberName(e.Name, 1)
	ids := etcdMemberIDs(e)
	start = time.Now()
	deleteEtcdPods(t, c, e, victim)
	waitMemberServes(t, c, e, victim, ids[victim])
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after a pod was deleted, want the same members %v", got, ids)
	}
	checkKeys(t, c, e, keys)
	t.Logf("pod %s deleted: back on its claim as the same member, Ready in %s", victim, time.Since(start).Round(time.Second))

	// Its data lost while the operator is away: the claim deleted with
	// the pod. The pod that comes back on a new, empty claim cannot
	// rejoin under the member's identity (its start-up file names no
	// peer): etcd exits, and the kubelet restarts it, without the
	// operator. Once back, the operator removes the member and adds it
	// back as a new one.
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: etcdcluster.ClaimName(victim)}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	oldClaim := claim.UID
	op.Stop()
	if err := c.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	deleteEtcdPods(t, c, e, victim)
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victim}, pod); err != nil {
			return false, err.Error()
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.RestartCount >= 2 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pod %s: %+v", victim, pod.Status.ContainerStatuses)
	})
	if id := memberServing(t, c, e, victim); id != "" {
		t.Errorf("pod %s on an empty claim serves as member %s, want it unable to join", victim, id)
	}
	t.Logf("claim of %s deleted with the operator away: the new pod's etcd exited twice without joining", victim)
	start = time.Now()
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			return false, err.Error()
		}
		for _, m := range e.Status.Members {
			if m.Name == victim && m.ID != ids[victim] && m.Healthy && !m.Learner && m.ClaimUID != "" && m.ClaimUID != string(oldClaim) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("members %+v", e.Status.Members)
	})
	waitMemberServes(t, c, e, victim, etcdMemberIDs(e)[victim])
	waitEtcdReady(t, c, e, 3, etcdVersion, 2*time.Minute)
	checkKeys(t, c, e, keys)
	t.Logf("operator back: %s replaced (id %s -> %s) on its new claim, Ready again in %s", victim, ids[victim], etcdMemberIDs(e)[victim], time.Since(start).Round(time.Second))
	ids = etcdMemberIDs(e)

	// Two of three members stopped in place (their processes frozen):
	// the quorum is lost, Ready says QuorumLost and which members are
	// down for as long as it lasts, and nothing is deleted or removed.
	down := []string{etcdcluster.MemberName(e.Name, 1), etcdcluster.MemberName(e.Name, 2)}
	pods, claims := etcdPodUIDs(t, c, e), etcdClaimUIDs(t, c, e)
	for _, name := range down {
		freezePod(t, c, ns, name)
	}
	cond = waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonQuorumLost, 2*time.Minute)
	t.Logf("two of three members stopped: Ready=False %s: %s", cond.Reason, cond.Message)
	for _, name := range down {
		if !strings.Contains(cond.Message, name) {
			t.Errorf("QuorumLost message %q does not name %s", cond.Message, name)
		}
	}
	// Some time for a wrong step to show.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			t.Fatal(err)
		}
		if got := findCondition(e.Status.Conditions, conditions.Ready); got == nil || got.Reason != etcdv1beta2.ReasonQuorumLost {
			t.Fatalf("Ready %+v while two of three members are stopped, want QuorumLost", got)
		}
	}
	checkMembersKept(t, c, e, "the quorum was lost", ids, pods, claims)
	start = time.Now()
	for _, name := range down {
		thawPod(t, c, ns, name)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 2*time.Minute)
	checkKeys(t, c, e, keys)
	t.Logf("members resumed: Ready again in %s with every key", time.Since(start).Round(time.Second))

	// Two of three pods deleted: both come back on their claims, and the
	// cluster is whole again with the same members and every key (an
	// empty member never votes a leader in without the writes).
	start = time.Now()
	deleteEtcdPods(t, c, e, down...)
	for _, name := range down {
		waitMemberServes(t, c, e, name, ids[name])
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after two pods were deleted, want the same members %v", got, ids)
	}
	checkKeys(t, c, e, keys)
	t.Logf("two of three pods deleted: back on their claims as the same members, Ready in %s with every key", time.Since(start).Round(time.Second))
}

// deleteEtcdPods deletes the named member pods of e at once and waits
// until the StatefulSet has made new ones.
func deleteEtcdPods(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, names ...string) {
	t.Helper()
	old := etcdPodUIDs(t, c, e)
	for _, name := range names {
		if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: name}}, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		now := etcdPodUIDs(t, c, e)
		for _, name := range names {
			if now[name] == "" || now[name] == old[name] {
				return false, fmt.Sprintf("pods %v", now)
			}
		}
		return true, ""
	})
}

// waitMemberServes waits until the pod name of e serves as the member
// of ID id (hex) and knows a leader.
func waitMemberServes(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, name, id string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		got := memberServing(t, c, e, name)
		return got == id, fmt.Sprintf("pod %s serves as member %q, want %s", name, got, id)
	})
}

// memberServing returns the ID (hex) of the member the pod name of e
// serves as, asked at the pod's own IP, when it answers and knows a
// leader; empty otherwise.
func memberServing(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, name string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: e.Namespace, Name: name}, pod); err != nil || pod.Status.PodIP == "" {
		return ""
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(etcdcluster.ClientPort))
	cli, err := etcdClient([]string{url})
	if err != nil {
		return ""
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, url)
	if err != nil || st.Leader == 0 {
		return ""
	}
	return strconv.FormatUint(st.Header.MemberId, 16)
}

// etcdMemberIDs maps e's recorded members to their IDs.
func etcdMemberIDs(e *etcdv1beta2.EtcdCluster) map[string]string {
	ids := map[string]string{}
	for _, m := range e.Status.Members {
		ids[m.Name] = m.ID
	}
	return ids
}

// checkMembersKept fails the test unless e's members (status.members), its
// pods and its claims are those given: none replaced or deleted since.
func checkMembersKept(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, since string, ids map[string]string, pods, claims map[string]types.UID) {
	t.Helper()
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("status.members %v after %s, want %v kept", got, since, ids)
	}
	if got := etcdPodUIDs(t, c, e); !maps.Equal(got, pods) {
		t.Errorf("pods %v after %s, want %v: none replaced or deleted", got, since, pods)
	}
	if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, claims) {
		t.Errorf("claims %v after %s, want %v: none replaced or deleted", got, since, claims)
	}
}

// etcdPodUIDs maps e's member pods to their uids.
func etcdPodUIDs(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) map[string]types.UID {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, p := range pods.Items {
		uids[p.Name] = p.UID
	}
	return uids
}

// etcdClaimUIDs maps e's claims to their uids.
func etcdClaimUIDs(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) map[string]types.UID {
	t.Helper()
	claims := &corev1.PersistentVolumeClaimList{}
	if err := c.List(context.Background(), claims, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, p := range claims.Items {
		uids[p.Name] = p.UID
	}
	return uids
}

// A patch upgrade (3.6.15 -> 3.6.16), then a minor one (3.6.16 -> 3.7.2),
// each roll one member at a time, the leader last, while writes go on:
// every write succeeds within 30 s (retried, as a client does), and no two
// member pods are ever not ready at once. Then, shrunk to two members,
// the cluster refuses to go to one and says why.
func TestEtcdClusterUpgradesRollOneMemberAtATime(t *testing.T) {
	ctx := context.Background()
	c, e := startEtcdSample(t, "upgrade", etcdPreviousVersion)
	keys := writeKeys(t, etcdClientOf(t, c, e), "before-upgrade", 20)

	for _, step := range []struct{ from, to string }{{etcdPreviousVersion, etcdVersion}, {etcdVersion, etcdNextVersion}} {
		r := rollUpgrade(t, c, e, step.to)
		t.Logf("%s -> %s in %s; pods upgraded in order %v; %d writes, %d needed a retry, %d failed within 30 s; at most %d member pod(s) not ready at once",
			step.from, step.to, r.took.Round(time.Second), r.order, r.writes, r.retried, r.failed, r.maxRestarting)
		if r.failed > 0 {
			t.Errorf("%d of %d writes failed during the upgrade to %s: %q", r.failed, r.writes, step.to, r.failures)
		}
		if r.maxRestarting > 1 {
			t.Errorf("%d member pods were not ready at once during the upgrade to %s, want one at a time", r.maxRestarting, step.to)
		}
		if len(r.order) != 3 {
			t.Errorf("pods upgraded to %s: %v, want all 3", step.to, r.order)
		}
	}
	checkKeys(t, c, e, keys)

	// Two members cannot lose one safely: the operator refuses, says why,
	// and keeps both.
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 2 })
	waitEtcdReady(t, c, e, 2, etcdNextVersion, 3*time.Minute)
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 1 })
	cond := waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonScaleInRefused, 2*time.Minute)
	t.Logf("size 2 -> 1: Ready=False %s: %s", cond.Reason, cond.Message)
	time.Sleep(10 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
		t.Fatal(err)
	}
	if len(e.Status.Members) != 2 || len(etcdPodUIDs(t, c, e)) != 2 {
		t.Errorf("members %+v, pods %v after a refused scale-in, want both kept", e.Status.Members, etcdPodUIDs(t, c, e))
	}
	checkKeys(t, c, e, keys)
}

// etcdClientOf returns a client of e's pods, closed when the test ends.
func etcdClientOf(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) *clientv3.Client {
	t.Helper()
	cli, err := etcdClient(etcdEndpoints(context.Background(), c, e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// upgradeRun is what rollUpgrade saw.
type upgradeRun struct {
	took                    time.Duration
	order                   []string
	writes, retried, failed int
	failures                []string
	maxRestarting           int
}

// rollUpgrade sets e's version to version and waits until e is Ready at
// it, writing keys back to back meanwhile and watching the member pods.
func rollUpgrade(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, version string) upgradeRun {
	t.Helper()
	ctx := context.Background()
	// Every member pod ready before the count starts: the pod a previous
	// change restarted last turns ready a probe period after the cluster
	// is Ready, and would count as a second one not ready beside the
	// first member the upgrade restarts.
	waitEtcdPodsReady(t, c, e, 3)
	cli := etcdClientOf(t, c, e)
	var r upgradeRun
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// A write is retried within writeBound: a request that
			// reaches a member as it restarts fails and goes to another.
			wc, cancel := context.WithTimeout(ctx, writeBound)
			var err error
			for attempt := 0; ; attempt++ {
				if _, err = cli.Put(wc, fmt.Sprintf("upgrade-%s/%05d", version, i), "v"); err == nil || wc.Err() != nil {
					break
				}
				if attempt == 0 {
					r.retried++
				}
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
			r.writes++
			if err != nil {
				r.failed++
				r.failures = append(r.failures, err.Error())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// The pods' images, as the upgrade changes them, and how many member
	// pods are not ready at once: at most one. (The status' member
	// versions are not used: the status is written at the end of the
	// pass that already moved to the next pod.)
	var mu sync.Mutex
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		seen := map[string]bool{}
		for watchCtx.Err() == nil {
			got := &etcdv1beta2.EtcdCluster{}
			pods := &corev1.PodList{}
			if c.Get(watchCtx, client.ObjectKeyFromObject(e), got) == nil &&
				c.List(watchCtx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))) == nil {
				restarting := 0
				mu.Lock()
				for _, p := range pods.Items {
					if p.Spec.Containers[0].Image == got.Spec.Image(version) && !seen[p.Name] {
						seen[p.Name] = true
						r.order = append(r.order, p.Name)
					}
					if !podReady(&p) {
						restarting++
					}
				}
				r.maxRestarting = max(r.maxRestarting, restarting)
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()

	start := time.Now()
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Version = version })
	waitEtcdReady(t, c, e, 3, version, 6*time.Minute)
	r.took = time.Since(start)
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	stopWatch()
	<-watched
	return r
}

func findCondition(conds []metav1.Condition, condType string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == condType {
			return &conds[i]
		}
	}
	return nil
}

// podReady reports whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitEtcdPodsReady waits until e has size member pods, every one ready
// (its Ready condition True) and none going. A member's pod turns ready a
// probe period after its etcd answers, so e can be Ready before all its
// pods are: a test that counts the pods not ready, or that takes a member
// down and expects the others in the client Service, waits for this.
func waitEtcdPodsReady(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, size int) {
	t.Helper()
	testenv.EventuallyInNamespace(t, c, e.Namespace, 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
			return false, err.Error()
		}
		var notReady []string
		for i := range pods.Items {
			if p := &pods.Items[i]; !podReady(p) || p.DeletionTimestamp != nil {
				notReady = append(notReady, p.Name)
			}
		}
		return len(pods.Items) == size && len(notReady) == 0, fmt.Sprintf("%d member pods, %d wanted; not ready: %v", len(pods.Items), size, notReady)
	})
}

// checkMembersServeMetrics reads etcd's own metrics from every member pod
// of e, at /metrics on its client port, or its plain metrics port with
// TLS (what the members' PodMonitor scrapes): each says it has a leader.
func checkMembersServeMetrics(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		port := etcdcluster.ClientPort
		if e.Spec.TLSEnabled() {
			port = etcdcluster.MetricsPort
		}
		url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)) + "/metrics"
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			resp, err := http.Get(url)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return false, err.Error()
			}
			return resp.StatusCode == http.StatusOK && strings.Contains(string(body), "\netcd_server_has_leader 1\n"),
				fmt.Sprintf("GET %s: %s, %d bytes, etcd_server_has_leader 1 among them: %v", url, resp.Status, len(body), strings.Contains(string(body), "etcd_server_has_leader 1"))
		})
	}
}
