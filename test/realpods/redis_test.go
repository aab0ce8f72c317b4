package realpods

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
	"github.com/app-operator/app-operator/test/workload"
)

// Bounds of the RedisEnterpriseCluster test.
const (
	redisReadyTimeout = 5 * time.Minute
	// redisFailoverBound is how soon after its primary's pod is deleted a
	// cluster must have a new primary that takes writes.
	redisFailoverBound = 30 * time.Second
)

// redisCluster is the test's view of one RedisEnterpriseCluster.
type redisCluster struct {
	t        *testing.T
	c        client.Client
	rec      *redisv1alpha1.RedisEnterpriseCluster
	password string
	// tls is the client configuration of a cluster with spec.tls.
	tls *tls.Config
}

func (r *redisCluster) refresh() {
	r.t.Helper()
	if err := r.c.Get(context.Background(), client.ObjectKeyFromObject(r.rec), r.rec); err != nil {
		r.t.Fatal(err)
	}
}

// podIP returns the address of the named pod ("" when it has none).
func (r *redisCluster) podIP(name string) string {
	pod := &corev1.Pod{}
	if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: r.rec.Namespace, Name: name}, pod); err != nil || pod.DeletionTimestamp != nil {
		return ""
	}
	return pod.Status.PodIP
}

func (r *redisCluster) client(ip string) *redis.Client {
	return redisClientTLS(ip, "", r.password, r.tls)
}

// clientOfPod is a client of the named node, with TLS when its pod mounts
// the certificate (a cluster on its way to TLS has both); nil while the
// pod has no address.
func (r *redisCluster) clientOfPod(name string) *redis.Client {
	pod := &corev1.Pod{}
	if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: r.rec.Namespace, Name: name}, pod); err != nil ||
		pod.DeletionTimestamp != nil || pod.Status.PodIP == "" {
		return nil
	}
	cfg := r.tls
	if !redisenterprisecluster.MountsTLS(pod) {
		cfg = nil
	}
	return redisClientTLS(pod.Status.PodIP, "", r.password, cfg)
}

func redisClient(ip, username, password string) *redis.Client {
	return redisClientTLS(ip, username, password, nil)
}

// redisClientTLS is redisClient over TLS when cfg is set.
func redisClientTLS(ip, username, password string, cfg *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: net.JoinHostPort(ip, strconv.Itoa(redisenterprisecluster.Port)), Username: username, Password: password, Protocol: 2,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true,
		TLSConfig: cfg,
	})
}

// replication returns the fields of INFO replication of the named node.
func (r *redisCluster) replication(name string) (map[string]string, error) {
	ip := r.podIP(name)
	if ip == "" {
		return nil, fmt.Errorf("pod %s has no address", name)
	}
	c := r.client(ip)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	text, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// replicas returns the nodes the status lists, but its primary.
func (r *redisCluster) replicas() []string {
	var out []string
	for _, n := range r.rec.Status.Nodes {
		if n.Name != r.rec.Status.Primary {
			out = append(out, n.Name)
		}
	}
	return out
}

// waitRunning waits for Ready=True, state Running, one primary and every
// other node a healthy replica of it, and returns the primary.
func (r *redisCluster) waitRunning(timeout time.Duration) string {
	r.t.Helper()
	waitCondition(r.t, r.c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable, timeout)
	st := r.rec.Status
	if st.State != redisv1alpha1.StateRunning || st.Primary == "" || len(st.Nodes) != int(r.rec.Spec.Nodes) {
		r.t.Fatalf("Ready, but state %s, primary %q, %d nodes", st.State, st.Primary, len(st.Nodes))
	}
	for _, n := range st.Nodes {
		want := redisv1alpha1.RoleReplica
		if n.Name == st.Primary {
			want = redisv1alpha1.RolePrimary
		}
		if n.Role != want || !n.Healthy {
			r.t.Fatalf("node %s: role %s healthy %v, want %s and healthy", n.Name, n.Role, n.Healthy, want)
		}
	}
	return st.Primary
}

// startWriter runs the register workload with WAIT 1, back to back.
func (r *redisCluster) startWriter(prefix string) *workload.Register {
	return r.startWriterWaiting(prefix, 1, 0)
}

// startWriterWaiting runs the register workload (package workload) on the
// keys of prefix against the primary the cluster's status records, as a
// careful client would during a failure or a change: SET, DEL and INCR
// back to back, pausing pause between them, each acknowledged only when
// WAIT says replicas replicas hold it. It records every op it may have
// sent, with its outcome.
func (r *redisCluster) startWriterWaiting(prefix string, replicas int, pause time.Duration) *workload.Register {
	key := client.ObjectKeyFromObject(r.rec)
	return workload.Start(workload.Config{Prefix: prefix, Replicas: replicas, Pause: pause, Primary: func() *redis.Client {
		// The node the cluster records, if it says it is one.
		rc := &redisv1alpha1.RedisEnterpriseCluster{}
		if err := r.c.Get(context.Background(), key, rc); err != nil || rc.Status.Primary == "" {
			return nil
		}
		return r.clientOfPod(rc.Status.Primary)
	}})
}

// checkNode reads the keys of h from the named node and checks their
// values against h: a key whose value no history of acknowledged ops
// allows is one on which a write is lost (or an old value came back).
func (r *redisCluster) checkNode(node string, h workload.History) (workload.Report, error) {
	ip := r.podIP(node)
	if ip == "" {
		return workload.Report{}, fmt.Errorf("pod %s has no address", node)
	}
	c := r.client(ip)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	final, err := workload.Read(ctx, c, h.Keys)
	if err != nil {
		return workload.Report{}, fmt.Errorf("read %d keys from %s: %w", len(h.Keys), node, err)
	}
	return workload.Check(h, final), nil
}

// checkNodes checks h against the named nodes, once, and fails the test
// for each that holds a value no acknowledged history allows or whose
// keys the checker gave up on. It returns the violations on each node.
func (r *redisCluster) checkNodes(h workload.History, nodes ...string) map[string]int {
	r.t.Helper()
	lost := map[string]int{}
	for _, n := range nodes {
		rep, err := r.checkNode(n, h)
		if err != nil {
			r.t.Fatal(err)
		}
		lost[n] = rep.Lost()
		if rep.Lost() > 0 {
			r.t.Errorf("node %s: %d of %d keys hold a value no history of the %d acknowledged ops allows:\n%s", n, rep.Lost(), len(rep.Keys), h.Acked(), violations(rep))
		}
		checkedEveryKey(r.t, n, rep)
	}
	return lost
}

// violations says what is wrong with the first few keys of rep, a line
// each.
func violations(rep workload.Report) string {
	const most = 3
	v := rep.Violations()
	lines := make([]string, 0, most+1)
	for _, k := range v[:min(len(v), most)] {
		lines = append(lines, k.Why)
	}
	if len(v) > most {
		lines = append(lines, fmt.Sprintf("and %d more", len(v)-most))
	}
	return strings.Join(lines, "\n")
}

// checkedEveryKey fails the test if the checker gave up on a key of rep
// (too many values possible): a loss there would go unseen.
func checkedEveryKey(t *testing.T, node string, rep workload.Report) {
	t.Helper()
	for _, k := range rep.Unchecked() {
		t.Errorf("node %s: %s", node, k.Why)
	}
}

// The RedisEnterpriseCluster sample, applied as written: it reaches Running
// with one primary and two synced replicas on volumes of the gp2 class; a
// key written to the primary is read from every replica; the password works
// (for the default user and the sample's username) and a wrong one is
// refused; deleting the primary's pod elects a new primary within
// redisFailoverBound with no acknowledged write lost, and the old primary's
// pod comes back, on its volume, as a replica; a new image rolls the nodes,
// the primary last, while writes keep being acknowledged.
func TestRedisEnterpriseClusterSample(t *testing.T) {
	needCluster(t)
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	obj := &redisv1alpha1.RedisEnterpriseCluster{}
	testenv.LoadSample(t, "app_v1alpha1_redisenterprisecluster.yaml", obj, ns)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	r := &redisCluster{t: t, c: c, rec: obj}
	start := time.Now()
	primary := r.waitRunning(redisReadyTimeout)
	t.Logf("Running after %v with primary %s", time.Since(start).Round(time.Millisecond), primary)

	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.Name}, secret); err != nil {
		t.Fatal(err)
	}
	r.password = string(secret.Data[redisenterprisecluster.SecretPassword])
	if got := string(secret.Data[redisenterprisecluster.SecretUsername]); got != "admin@acme.com" || len(r.password) < 16 {
		t.Fatalf("Secret: username %q, password of %d characters", got, len(r.password))
	}
	for _, n := range r.rec.Status.Nodes {
		if strings.Contains(fmt.Sprint(r.rec.Status), r.password) {
			t.Fatalf("status holds the password (node %s)", n.Name)
		}
	}

	t.Run("its gauges are on the metrics page and its first primary is an event", func(t *testing.T) {
		key := client.ObjectKeyFromObject(obj)
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			got := clusterGauges(t, key)
			ok := got["app_operator_redisenterprisecluster_nodes"] == 3 && got["app_operator_redisenterprisecluster_nodes_healthy"] == 3 &&
				got["app_operator_redisenterprisecluster_has_primary"] == 1
			for _, n := range r.rec.Status.Nodes {
				// An idle replica is at most the primary's last ping behind.
				lag, found := got["app_operator_redisenterprisecluster_replica_lag_bytes/"+n.Name]
				ok = ok && (n.Name == primary) != found && lag < 1024
			}
			return ok, fmt.Sprintf("gauges %v; want 3 nodes, 3 healthy, a primary, and a small lag for each replica", got)
		})
		waitEventReasons(t, c, "RedisEnterpriseCluster", key, redisv1alpha1.EventPrimaryElected)
	})

	t.Run("the password is on no command line of the node", func(t *testing.T) {
		// The real node's processes are this machine's: what ps shows.
		servers := 0
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			cmdline, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(cmdline, []byte("redis-server")) {
				continue
			}
			servers++
			if bytes.Contains(cmdline, []byte(r.password)) {
				t.Errorf("%s holds the password: %q", p, bytes.ReplaceAll(cmdline, []byte(r.password), []byte("<password>")))
			}
		}
		if servers < 3 {
			t.Errorf("%d redis-server processes found, want the 3 nodes' at least", servers)
		}
	})

	t.Run("volumes of the gp2 class", func(t *testing.T) {
		pvcs := &corev1.PersistentVolumeClaimList{}
		if err := c.List(ctx, pvcs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(pvcs.Items) != 3 {
			t.Fatalf("%d claims, want 3", len(pvcs.Items))
		}
		for _, p := range pvcs.Items {
			if p.Status.Phase != corev1.ClaimBound || p.Spec.StorageClassName == nil || *p.Spec.StorageClassName != cluster.StorageClassGP2 {
				t.Errorf("claim %s: %s, class %v", p.Name, p.Status.Phase, p.Spec.StorageClassName)
			}
		}
	})

	t.Run("a key written to the primary is read from every replica", func(t *testing.T) {
		p := r.client(r.podIP(primary))
		defer p.Close()
		if err := p.Set(ctx, "greeting", "hello from the primary", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Do(ctx, "WAIT", 2, 2000).Int64(); err != nil || n != 2 {
			t.Fatalf("WAIT 2: %d replicas (%v)", n, err)
		}
		for _, n := range r.rec.Status.Nodes {
			if n.Name == primary {
				continue
			}
			rc := r.client(r.podIP(n.Name))
			got, err := rc.Get(ctx, "greeting").Result()
			rc.Close()
			if err != nil || got != "hello from the primary" {
				t.Errorf("replica %s: GET greeting = %q (%v)", n.Name, got, err)
			}
			if err := r.client(r.podIP(n.Name)).Set(ctx, "on-a-replica", "x", 0).Err(); err == nil || !strings.Contains(err.Error(), "READONLY") {
				t.Errorf("replica %s took a write: %v", n.Name, err)
			}
		}
	})

	t.Run("the password works and a wrong one is refused", func(t *testing.T) {
		ip := r.podIP(primary)
		for _, tc := range []struct {
			user, password string
			ok             bool
		}{
			{"", r.password, true},
			{"admin@acme.com", r.password, true},
			{"", "wrong-password", false},
			{"admin@acme.com", "wrong-password", false},
			{"", "", false},
		} {
			rc := redisClient(ip, tc.user, tc.password)
			err := rc.Ping(ctx).Err()
			rc.Close()
			if tc.ok && err != nil {
				t.Errorf("user %q with the Secret's password: %v", tc.user, err)
			}
			if !tc.ok && (err == nil || !(strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "NOAUTH"))) { //nolint:staticcheck // Not one of the two refusals, as the test means it.
				t.Errorf("user %q with password %q: %v, want refused", tc.user, tc.password, err)
			}
		}
	})

	t.Run("a replica made a second primary is fenced back into a replica", func(t *testing.T) {
		var stale string
		for _, n := range r.rec.Status.Nodes {
			if n.Name != primary {
				stale = n.Name
			}
		}
		rc := r.client(r.podIP(stale))
		err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err()
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		made := time.Now()
		testenv.Eventually(t, redisFailoverBound, func() (bool, string) {
			info, err := r.replication(stale)
			if err != nil {
				return false, err.Error()
			}
			return info["role"] == "slave" && strings.HasPrefix(info["master_host"], primary+"."), fmt.Sprintf("%s: role %s of %s", stale, info["role"], info["master_host"])
		})
		t.Logf("%s, made a primary, was a replica of %s again after %v", stale, primary, time.Since(made).Round(time.Millisecond))
		if got := r.waitRunning(time.Minute); got != primary {
			t.Errorf("primary %s, want %s kept", got, primary)
		}
	})

	t.Run("deleting the primary's pod elects a new primary and loses no acknowledged write", func(t *testing.T) {
		old := primary
		claim := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + old}, claim); err != nil {
			t.Fatal(err)
		}
		w := r.startWriter("failover")
		testenv.Eventually(t, 30*time.Second, func() (bool, string) { return w.Acked() >= 20, "waiting for writes" })
		deleted := time.Now()
		if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: old}}); err != nil {
			t.Fatal(err)
		}
		var elected time.Duration
		testenv.Eventually(t, redisFailoverBound, func() (bool, string) {
			r.refresh()
			if r.rec.Status.Primary == old {
				return false, "primary still " + old
			}
			info, err := r.replication(r.rec.Status.Primary)
			if err != nil || info["role"] != "master" {
				return false, fmt.Sprintf("%s: %v %v", r.rec.Status.Primary, info["role"], err)
			}
			elected = time.Since(deleted)
			return true, ""
		})
		before := w.Acked()
		testenv.Eventually(t, redisFailoverBound, func() (bool, string) {
			return w.Acked() > before+10, "waiting for writes to the new primary"
		})
		tookWrites := time.Since(deleted)
		primary = r.waitRunning(3 * time.Minute)
		h := w.Stop()
		t.Logf("new primary %s elected %v after the delete, writes acknowledged again after %v; %d writes acknowledged, %d refused or failed (last: %s), longest gap %v",
			primary, elected.Round(time.Millisecond), tookWrites.Round(time.Millisecond), h.Acked(), w.Errors(), w.LastError(), w.LongestGap().Round(time.Millisecond))
		r.lostWrites(h)
		info, err := r.replication(old)
		if err != nil || info["role"] != "slave" || !strings.HasPrefix(info["master_host"], primary+".") || info["master_link_status"] != "up" {
			t.Errorf("old primary %s: role %s of %s, link %s (%v); want a replica of %s", old, info["role"], info["master_host"], info["master_link_status"], err, primary)
		}
		after := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + old}, after); err != nil {
			t.Fatal(err)
		}
		if after.UID != claim.UID || after.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim data-%s: uid %s (was %s), %s; want the same claim, bound", old, after.UID, claim.UID, after.Status.Phase)
		}
	})

	t.Run("a primary whose Redis stops and restarts in its pod loses no acknowledged write", func(t *testing.T) {
		old := primary
		w := r.startWriter("restart")
		testenv.Eventually(t, 30*time.Second, func() (bool, string) { return w.Acked() >= 20, "waiting for writes" })
		rc := r.client(r.podIP(old))
		// The container exits; the kubelet starts it again in the same pod,
		// on the same volume, from the same role file.
		_ = rc.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
		rc.Close()
		stopped := time.Now()
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			pod := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, pod); err != nil {
				return false, err.Error()
			}
			restarts := int32(0)
			for _, cs := range pod.Status.ContainerStatuses {
				restarts += cs.RestartCount
			}
			return restarts > 0, "container not restarted yet"
		})
		primary = r.waitRunning(2 * time.Minute)
		before := w.Acked()
		testenv.Eventually(t, redisFailoverBound, func() (bool, string) { return w.Acked() > before+10, "waiting for writes" })
		h := w.Stop()
		t.Logf("after %s's Redis stopped, the primary is %s; Running again %v later; %d writes acknowledged, %d refused or failed (last: %s), longest gap %v",
			old, primary, time.Since(stopped).Round(time.Millisecond), h.Acked(), w.Errors(), w.LastError(), w.LongestGap().Round(time.Millisecond))
		r.lostWrites(h)
	})

	t.Run("a new image rolls the nodes while writes keep being acknowledged", func(t *testing.T) {
		w := r.startWriter("rolling")
		testenv.Eventually(t, 30*time.Second, func() (bool, string) { return w.Acked() >= 20, "waiting for writes" })
		r.refresh()
		// The sample's Redis Enterprise image runs as redis:7.0.15; the
		// official image's -bookworm tag is another image to move to.
		r.rec.Spec.RedisEnterpriseImageSpec.Repository, r.rec.Spec.RedisEnterpriseImageSpec.VersionTag = "redis", "7.0.15-bookworm"
		if err := c.Update(ctx, r.rec); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		sawRolling := false
		testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
			r.refresh()
			if r.rec.Status.State == redisv1alpha1.StateRunningRollingUpdate {
				sawRolling = true
			}
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(redisenterprisecluster.Selector(r.rec.Name))); err != nil {
				return false, err.Error()
			}
			for _, p := range pods.Items {
				if p.Spec.Containers[0].Image != "redis:7.0.15-bookworm" || p.DeletionTimestamp != nil {
					return false, "pod " + p.Name + " runs " + p.Spec.Containers[0].Image
				}
			}
			return r.rec.Status.State == redisv1alpha1.StateRunning && r.rec.Status.ObservedGeneration == r.rec.Generation, "state " + string(r.rec.Status.State)
		})
		rolled := time.Since(started)
		primary = r.waitRunning(time.Minute)
		h := w.Stop()
		t.Logf("rolled in %v (RunningRollingUpdate seen: %v); %d writes acknowledged, %d refused or failed (last: %s), longest gap between acknowledged writes %v",
			rolled.Round(time.Millisecond), sawRolling, h.Acked(), w.Errors(), w.LastError(), w.LongestGap().Round(time.Millisecond))
		if !sawRolling {
			t.Error("the state was never RunningRollingUpdate")
		}
		if w.LongestGap() > redisFailoverBound {
			t.Errorf("no write was acknowledged for %v", w.LongestGap())
		}
		lost := r.checkNodes(h, primary)[primary]
		// A roll has no end before Running: its Ready time is from the
		// spec's change.
		recordCell(faultCell{kind: "Redis", fault: "a new image rolled through the nodes under writes, the primary last after a handover (the sample)",
			acked: h.Acked(), lost: lost, unavailable: w.LongestGap(), toReady: rolled})
	})
}
