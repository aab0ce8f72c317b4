package realpods

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
	"github.com/app-operator/app-operator/test/workload"
)

// The data services' scale bench (make bench-stateful): K
// RedisEnterpriseClusters of three nodes and K/5 EtcdClusters (rounded up)
// of three members, created together on the real node, watched by one
// operator process in a memory cgroup of its own. For each K it prints how
// long they took to run, what the operator costs at rest (CPU, API
// requests, connections, memory) while a client writes to every Redis
// cluster, and how long each Redis cluster took to get a new primary once
// every primary was frozen at once.

// Environment of the bench: it runs only when BenchStatefulEnv is set.
const (
	// BenchStatefulEnv is the comma-separated Ks, e.g. 1,10,30,50.
	BenchStatefulEnv = "APP_OPERATOR_BENCH_STATEFUL"
	// BenchRestEnv is how long the operator is measured at rest (a Go
	// duration); one minute when unset.
	BenchRestEnv = "APP_OPERATOR_BENCH_REST"
	// BenchWorkersEnv, when set, is the operator's
	// --max-concurrent-stateful-reconciles.
	BenchWorkersEnv = "APP_OPERATOR_BENCH_WORKERS"
	// BenchTLSEnv, when set (to anything), gives every Redis cluster
	// spec.tls, a Secret of the test's CA.
	BenchTLSEnv = "APP_OPERATOR_BENCH_TLS"
	// BenchOutEnv, when set, is a file the bench appends its lines to, as
	// well as printing them (go test shows a passing test's output only
	// with -v).
	BenchOutEnv = "APP_OPERATOR_BENCH_OUT"
)

// benchOut is where the bench prints: standard error, and the file of
// BenchOutEnv.
var benchOut io.Writer = os.Stderr

// benchSampled is how many Redis clusters of a K run the history-checking
// workload through the failover.
const benchSampled = 3

// benchResult is what the bench measured at one K.
type benchResult struct {
	k, etcds            int
	toRunning           time.Duration
	restFor             time.Duration
	cpuPerMin           float64
	readsPerMin         float64
	writesPerMin        float64
	writes              map[string]float64
	conns               int
	workingSet, anonRSS int64
	failovers           []time.Duration
	sampledAcked, lost  int
	window              time.Duration
}

func TestBenchStateful(t *testing.T) {
	ks := os.Getenv(BenchStatefulEnv)
	if ks == "" {
		t.Skipf("the data services' scale bench runs with %s=1,10,30,50 (make bench-stateful)", BenchStatefulEnv)
	}
	needCluster(t)
	if path := os.Getenv(BenchOutEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		benchOut = io.MultiWriter(os.Stderr, f)
	}
	workers := os.Getenv(BenchWorkersEnv)
	if workers == "" {
		workers = "default"
	}
	fmt.Fprintf(benchOut, "%s %s=%s, --max-concurrent-stateful-reconciles %s, failover window %s, TLS %v\n",
		time.Now().UTC().Format(time.RFC3339), BenchStatefulEnv, ks, workers, cellFailoverAfter, os.Getenv(BenchTLSEnv) != "")
	rest := time.Minute
	if v := os.Getenv(BenchRestEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", BenchRestEnv, v, err)
		}
		rest = d
	}
	var results []benchResult
	for _, f := range strings.Split(ks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			t.Fatalf("%s=%q: want numbers of clusters", BenchStatefulEnv, ks)
		}
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			res := benchK(t, k, (k+4)/5, rest)
			results = append(results, res)
			printBench(benchOut, results)
		})
	}
	printBench(benchOut, results)
}

// benchK runs the bench at one K, with etcds EtcdClusters.
func benchK(t *testing.T, k, etcds int, rest time.Duration) benchResult {
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	// The namespace goes when the subtest ends; the next K starts on an
	// empty node (cleanups run last first: this waits for the deletion).
	t.Cleanup(func() { waitNamespaceGone(t, c, ns) })
	op := startBenchOperator(t)
	res := benchResult{k: k, etcds: etcds, window: cellFailoverAfter}

	// Created together.
	start := time.Now()
	recs := make([]*redisCluster, 0, k)
	for i := range k {
		recs = append(recs, createBenchRedis(t, c, ns, fmt.Sprintf("r%02d", i), os.Getenv(BenchTLSEnv) != ""))
	}
	for i := range etcds {
		createBenchEtcd(t, c, ns, fmt.Sprintf("e%02d", i))
	}
	testenv.EventuallyInNamespace(t, c, ns, 15*time.Minute, func() (bool, string) {
		return allRunning(c, ns, k, etcds)
	})
	res.toRunning = time.Since(start)
	fmt.Fprintf(benchOut, "K=%d: %d Redis and %d etcd clusters running after %.1f s\n", k, k, etcds, res.toRunning.Seconds())
	for _, r := range recs {
		r.refresh()
		r.readPassword()
	}

	// At rest, a client writing to every Redis cluster.
	stopWriters := startRestWriters(recs)
	time.Sleep(30 * time.Second) // the last passes of the start settle
	before := op.scrape(t)
	auditFrom := auditSize()
	time.Sleep(rest)
	after := op.scrape(t)
	if named := operatorWrites(t, auditFrom); len(named) > 0 {
		fmt.Fprintf(benchOut, "K=%d: the operator's writes at rest: %s\n", k, strings.Join(named, ", "))
	}
	stopWriters()
	res.restFor = rest
	mins := rest.Minutes()
	res.cpuPerMin = (after.cpu - before.cpu) / mins
	res.writes = map[string]float64{}
	for m, n := range after.requests {
		d := n - before.requests[m]
		switch m {
		case "GET", "LIST", "WATCH":
			res.readsPerMin += d / mins
		default:
			if d > 0 {
				res.writes[m] = d
				res.writesPerMin += d / mins
			}
		}
	}
	res.conns = op.connections(t)
	res.workingSet, res.anonRSS = op.memory(t)

	// Every primary frozen at once; a sample of clusters runs the
	// history-checking workload through it.
	writers := make([]*workload.Register, 0, benchSampled)
	sample := recs[:min(benchSampled, len(recs))]
	for _, r := range sample {
		w := r.startWriterWaiting("bench", 1, cellWritePause)
		waitWrites(t, w, 100)
		writers = append(writers, w)
	}
	old := map[string]string{}
	frozen := map[string]time.Time{}
	for _, r := range recs {
		old[r.rec.Name] = r.rec.Status.Primary
	}
	for _, r := range recs {
		freezePod(t, c, ns, old[r.rec.Name])
		frozen[r.rec.Name] = time.Now()
	}
	newAt := map[string]time.Duration{}
	testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
		list := &redisv1alpha1.RedisEnterpriseClusterList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, rec := range list.Items {
			if _, ok := newAt[rec.Name]; !ok && rec.Status.Primary != "" && rec.Status.Primary != old[rec.Name] {
				newAt[rec.Name] = time.Since(frozen[rec.Name])
			}
		}
		return len(newAt) == k, fmt.Sprintf("%d of %d clusters have a new primary", len(newAt), k)
	})
	for _, d := range newAt {
		res.failovers = append(res.failovers, d)
	}
	slices.Sort(res.failovers)
	for _, w := range writers {
		waitWrites(t, w, 20)
	}
	for _, r := range recs {
		thawPod(t, c, ns, old[r.rec.Name])
	}
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		return allRunning(c, ns, k, etcds)
	})
	for i, r := range sample {
		sub := *r
		sub.t = t
		h := writers[i].Stop()
		res.sampledAcked += h.Acked()
		res.lost += sub.lostWrites(h)
	}
	fmt.Fprintf(benchOut, "K=%d: failovers done, %d acknowledged writes checked, %d lost\n", k, res.sampledAcked, res.lost)
	if res.lost > 0 {
		t.Errorf("%d acknowledged writes lost", res.lost)
	}
	if len(res.writes) > 0 {
		t.Errorf("API writes at rest: %v", res.writes)
	}
	return res
}

// benchAuditPolicy logs every write, without its body.
const benchAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// auditSize is how far the audit log goes now.
func auditSize() int64 {
	fi, err := os.Stat(testCluster.AuditLogPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// operatorWrites names the writes the operator (its user agent) made from
// offset of the audit log on: "verb resource[/subresource] namespace/name".
func operatorWrites(t *testing.T, offset int64) []string {
	t.Helper()
	f, err := os.Open(testCluster.AuditLogPath())
	if err != nil {
		t.Logf("audit log: %v", err)
		return nil
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var e struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			Stage     string `json:"stage"`
			Code      struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Ref struct {
				Resource, Subresource, Namespace, Name string
			} `json:"objectRef"`
		}
		if json.Unmarshal(s.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || !strings.HasPrefix(e.UserAgent, "app-operator/") {
			continue
		}
		what := e.Ref.Resource
		if e.Ref.Subresource != "" {
			what += "/" + e.Ref.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s (%d)", e.Verb, what, e.Ref.Namespace, e.Ref.Name, e.Code.Code))
	}
	return out
}

// createBenchRedis creates a three-node RedisEnterpriseCluster with small
// requests, with TLS when withTLS, without waiting.
func createBenchRedis(t *testing.T, c client.Client, ns, name string, withTLS bool) *redisCluster {
	t.Helper()
	r := &redisCluster{t: t, c: c}
	var spec string
	if withTLS {
		writeTLSSecret(t, c, ns, name+"-tls", redisenterprisecluster.ServiceHost(name, ns))
		spec = fmt.Sprintf("  tls: {secretName: %s-tls}\n", name)
		cfg, err := testClientTLS()
		if err != nil {
			t.Fatal(err)
		}
		r.tls = cfg
	}
	doc := fmt.Sprintf(`apiVersion: app.redislabs.com/v1alpha1
kind: RedisEnterpriseCluster
metadata: {name: %s, namespace: %s}
spec:
  nodes: 3
  redisEnterpriseNodeResources:
    limits: {cpu: 500m, memory: 128Mi}
    requests: {cpu: 5m, memory: 16Mi}
`, name, ns) + spec
	obj := &redisv1alpha1.RedisEnterpriseCluster{}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, c, obj)
	r.rec = obj
	return r
}

// createBenchEtcd creates a three-member EtcdCluster with small requests,
// without waiting.
func createBenchEtcd(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name, e.Spec.Version = name, etcdVersion
	e.Spec.Pod = &etcdv1beta2.PodPolicy{Resources: &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	}}
	testenv.Create(t, c, e)
}

// allRunning reports whether the namespace has k Redis clusters Running
// and etcds etcd clusters Ready, every one at its generation.
func allRunning(c client.Client, ns string, k, etcds int) (bool, string) {
	ctx := context.Background()
	rl := &redisv1alpha1.RedisEnterpriseClusterList{}
	el := &etcdv1beta2.EtcdClusterList{}
	if err := c.List(ctx, rl, client.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	if err := c.List(ctx, el, client.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	redisUp, etcdUp := 0, 0
	for _, r := range rl.Items {
		if meta.IsStatusConditionTrue(r.Status.Conditions, conditions.Ready) && r.Status.State == redisv1alpha1.StateRunning &&
			r.Status.ObservedGeneration == r.Generation {
			redisUp++
		}
	}
	for _, e := range el.Items {
		if meta.IsStatusConditionTrue(e.Status.Conditions, conditions.Ready) && e.Status.ObservedGeneration == e.Generation && len(e.Status.Members) == 3 {
			etcdUp++
		}
	}
	return redisUp == k && etcdUp == etcds, fmt.Sprintf("%d of %d Redis clusters Running, %d of %d etcd clusters Ready", redisUp, k, etcdUp, etcds)
}

// startRestWriters runs a client on every Redis cluster that writes a key
// to its primary every 200 ms, and returns the function that stops them.
func startRestWriters(recs []*redisCluster) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range recs {
		rc := r.clientOfPod(r.rec.Status.Primary)
		if rc == nil {
			continue
		}
		wg.Go(func() {
			defer func() { _ = rc.Close() }()
			for i := 0; ctx.Err() == nil; i++ {
				_ = rc.Set(ctx, "rest", i, 0).Err()
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

// waitNamespaceGone waits until the namespace and its pods are gone.
func waitNamespaceGone(t *testing.T, c client.Client, ns string) {
	t.Helper()
	_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	testenv.Eventually(t, 10*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods of namespace %s left", len(pods.Items), ns)
	})
}

// benchOperator is the operator process the bench measures: its metrics
// endpoint (plain HTTP, on loopback) and its memory cgroup.
type benchOperator struct {
	pid     int
	metrics string
	cgroup  string
}

// startBenchOperator runs the manager binary as its own process, in a
// memory cgroup of its own (cgroup v1, under this process's), watching
// every namespace, with the cells' failover window.
func startBenchOperator(t *testing.T) *benchOperator {
	t.Helper()
	bin, kubeconfig := managerAsOperatorUID(t)
	own, err := ownMemoryCgroupV1()
	if err != nil {
		t.Skipf("the bench needs a cgroup v1 memory hierarchy: %v", err)
	}
	cg := filepath.Join(own, fmt.Sprintf("app-operator-bench-%d", time.Now().UnixNano()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Once the process has gone.
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			err := os.Remove(cg)
			return err == nil || os.IsNotExist(err), fmt.Sprint(err)
		})
	})
	wrapper := filepath.Join(t.TempDir(), "in-cgroup.sh")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s/cgroup.procs || exit 1\nexec %s \"$@\"\n", cg, bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	args := []string{
		"--health-probe-bind-address=0", "--metrics-secure=false", fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port),
		"--snapshot-image=" + operatorImage(t), "--redis-failover-after=" + cellFailoverAfter.String(),
	}
	if w := os.Getenv(BenchWorkersEnv); w != "" {
		args = append(args, "--max-concurrent-stateful-reconciles="+w)
	}
	p := testenv.StartManagerAs(t, 0, wrapper, kubeconfig, filepath.Join(t.TempDir(), "manager.log"), args...)
	op := &benchOperator{pid: p.Pid(), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), cgroup: cg}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		resp, err := http.Get(op.metrics)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return true, ""
	})
	return op
}

// ownMemoryCgroupV1 is the directory of this process's memory cgroup on
// cgroup v1.
func ownMemoryCgroupV1() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "memory") {
			dir := filepath.Join("/sys/fs/cgroup/memory", parts[2])
			if _, err := os.Stat(filepath.Join(dir, "memory.stat")); err != nil {
				return "", err
			}
			return dir, nil
		}
	}
	return "", fmt.Errorf("no memory hierarchy in /proc/self/cgroup")
}

// freePort returns a TCP port free on loopback now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// operatorMetrics is what the operator's metrics say: its CPU seconds
// and its API requests by method.
type operatorMetrics struct {
	cpu      float64
	requests map[string]float64
}

// scrape reads the operator's metrics.
func (o *benchOperator) scrape(t *testing.T) operatorMetrics {
	t.Helper()
	resp, err := http.Get(o.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	m, err := parseOperatorMetrics(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parseOperatorMetrics reads process_cpu_seconds_total and
// rest_client_requests_total, summed by method, from the text format.
func parseOperatorMetrics(r io.Reader) (operatorMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return operatorMetrics{}, err
	}
	m := operatorMetrics{requests: map[string]float64{}}
	if f, ok := families["process_cpu_seconds_total"]; ok && len(f.GetMetric()) > 0 {
		m.cpu = f.GetMetric()[0].GetCounter().GetValue()
	}
	if f, ok := families["rest_client_requests_total"]; ok {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "method" {
					m.requests[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	return m, nil
}

// connections counts the operator's established TCP connections.
func (o *benchOperator) connections(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", o.pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", o.pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", o.pid, table))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			// sl local rem st ... uid timeout inode
			if len(fields) > 9 && fields[3] == "01" && inodes[fields[9]] {
				n++
			}
		}
		_ = f.Close()
	}
	return n
}

// memory reads the operator's cgroup: its working set (usage less the
// inactive file pages, as the kubelet computes it) and its anonymous RSS.
func (o *benchOperator) memory(t *testing.T) (workingSet, anon int64) {
	t.Helper()
	usage, err := os.ReadFile(filepath.Join(o.cgroup, "memory.usage_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(filepath.Join(o.cgroup, "memory.stat"))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64)
	var inactive int64
	for _, line := range strings.Split(string(stat), "\n") {
		name, value, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "total_inactive_file":
			inactive = n
		case "total_rss":
			anon = n
		}
	}
	return max(u-inactive, 0), anon
}

// printBench prints the results so far as a table.
func printBench(w io.Writer, results []benchResult) {
	fmt.Fprintf(w, "\n%4s %5s %10s %12s %12s %13s %12s %6s %8s %8s %9s %9s %9s %7s %10s\n",
		"K", "etcd", "running s", "cpu s/min", "cpu/cl ms/m", "reads/min/cl", "writes/min", "conns", "ws MiB", "anon MiB",
		"fo med s", "fo p95 s", "fo last s", "window", "lost/acked")
	for _, r := range results {
		clusters := float64(r.k + r.etcds)
		fmt.Fprintf(w, "%4d %5d %10.1f %12.3f %12.1f %13.1f %12.1f %6d %8.1f %8.1f %9.1f %9.1f %9.1f %7s %10s\n",
			r.k, r.etcds, r.toRunning.Seconds(), r.cpuPerMin, 1000*r.cpuPerMin/clusters, r.readsPerMin/clusters, r.writesPerMin, r.conns,
			float64(r.workingSet)/(1<<20), float64(r.anonRSS)/(1<<20),
			quantile(r.failovers, 0.5).Seconds(), quantile(r.failovers, 0.95).Seconds(), quantile(r.failovers, 1).Seconds(), r.window,
			fmt.Sprintf("%d/%d", r.lost, r.sampledAcked))
	}
}

// quantile is the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
