// Package bench measures the operator on the full local cluster, against a
// bare client-go program doing the least the same job needs: how long N
// applications take to converge, how many writes that costs, whether a
// restart writes anything, how many writes a one-field update costs, how
// much memory the operator holds per application against a program that
// only runs informers over the same objects, and how soon a new resource
// gets served while a backlog is being worked through.
//
// The operator runs as a separate process, the real binary, authenticated
// with a ServiceAccount token bound to the operator's generated ClusterRole,
// so API Priority and Fairness treats it as in production and its memory
// and requests are its own. Writes are counted twice: by the operator's
// client metrics (rest_client_requests_total) and by the API server's audit
// log, filtered to the ServiceAccount and the benchmark's namespaces.
//
// Each case runs on a fresh cluster, so that no case inherits another's
// objects, and so does its bare client: on a cluster holding the same N
// applications and nothing else, as the operator's cold converge starts.
// `make bench` runs it through hack/bench; TestBenchSmoke runs a small case
// inside `make test`.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

const (
	operatorNamespace      = "app-operator-system"
	operatorServiceAccount = "app-operator"
	opPrefix               = "bench-op-"
	barePrefix             = "bench-bare-"
	probeNamespace         = "bench-probe"
)

// Config configures Run.
type Config struct {
	// Operator is the operator binary (`make build`).
	Operator string
	// OperatorEnv is added to the operator's environment, as NAME=value
	// (cluster.ManagerEnv gives the manager Deployment's).
	OperatorEnv []string
	// Self is an executable that runs the bare client and the informer
	// floor when RoleEnv is set (see RunRole).
	Self string
	// N are the numbers of applications; each gets its cases.
	N []int
	// Workloads name the kinds measured at every N (see WorkloadNames).
	Workloads []string
	// Workers is the operator's --max-concurrent-reconciles, and the bare
	// client's concurrency.
	Workers int
	// Sweep are further worker counts measured for the first workload at
	// the first N (cold converge against the bare client).
	Sweep []int
	// Repeat is how many times the first workload's cold converge at each
	// N, and its bare client, are measured (at least once): on a shared
	// machine one pair's ratio varies from run to run, their median less.
	Repeat int
	// PerNamespace is how many applications share a namespace.
	PerNamespace int
	// Memory runs the memory ramp (the first workload, up to the largest N
	// or the workload's cap, against the informer floor, then with
	// Unrelated other objects).
	Memory    bool
	Unrelated int
	// MemoryOnly skips the cases: only the memory ramp runs.
	MemoryOnly bool
	// OperatorOnly measures each case's operator once, without the bare
	// client: its writes, probes and memory, no converge ratio.
	OperatorOnly bool
	// ProfileDir, when set, receives the heap profiles of the operator
	// and of the informer floor at the largest N of the memory ramp
	// (heap-<N>.pprof, heap-<N>-floor.pprof), and a profile of the
	// operator's CPU and of the API server's over the first cold
	// converge of each case (cpu-<workload>-<N>.pprof,
	// apiserver-cpu-<workload>-<N>.pprof), and of the API server's over
	// its bare client's run (apiserver-cpu-<workload>-<N>-bare.pprof).
	ProfileDir string
	// Timeout bounds each wait.
	Timeout time.Duration
	// Progress receives a line per step.
	Progress io.Writer
}

// Case is what one workload at one N and one worker count measured.
type Case struct {
	Workload   string `json:"workload"`
	N          int    `json:"n"`
	Workers    int    `json:"workers"`
	Namespaces int    `json:"namespaces"`
	// Children is how many children each application has.
	Children int `json:"childrenPerApp"`

	// BareSeconds runs from the bare client's start until the status it
	// wrote for the last application is seen, timed by the same watch on
	// the applications as ConvergeSeconds (which runs in both clusters).
	BareSeconds float64 `json:"bareSeconds"`
	BareWrites  int64   `json:"bareWrites"`

	// ConvergeSeconds runs from the operator's start until every
	// application's status observes its generation (every child applied).
	ConvergeSeconds float64 `json:"convergeSeconds"`
	// FirstSeconds runs from the operator's start until the first
	// application's status observes its generation: the start-up (the
	// permission check, the caches' first lists) and one pass.
	FirstSeconds float64 `json:"firstSeconds"`
	// ChildrenSeconds runs from the operator's start until its last write
	// to a child (audit log): the rest of ConvergeSeconds is the wait for
	// the Deployment controller to observe the children, which the status
	// reports.
	ChildrenSeconds float64 `json:"childrenSeconds"`
	// ConvergeRatio is ConvergeSeconds / BareSeconds; with repeats, the
	// median of the pairs' ratios (Pairs).
	ConvergeRatio float64 `json:"convergeRatio"`
	// Pairs are the cold converges and their bare clients measured, the
	// first being ConvergeSeconds and BareSeconds.
	Pairs []Pair `json:"pairs"`
	// ConvergeCPU is the CPU seconds each process used during the cold
	// converge (see Pair).
	ConvergeCPU map[string]float64 `json:"convergeCPU"`
	// ConvergeRequests are the requests the API server served during the
	// cold converge (see Pair).
	ConvergeRequests apiRequests `json:"convergeRequests"`
	// ReadCost is what a read cost the API server and etcd, measured after
	// the other scenarios (full cases only).
	ReadCost *ReadCost `json:"readCost,omitempty"`
	// ColdPassesPerApp is the operator's finished passes of the workload's
	// controller, from its start until it settled after the cold converge,
	// per application.
	ColdPassesPerApp float64 `json:"coldPassesPerApp"`
	// ReadySeconds runs until every application is Ready, which also waits
	// for the Deployment controller (kube-controller-manager, with its own
	// client-side rate limit) to report every rollout.
	ReadySeconds float64 `json:"readySeconds"`
	// ColdWrites are the operator's mutating requests in the applications'
	// namespaces during the cold converge (audit log), by verb and resource.
	ColdWrites auditCounts `json:"coldWrites"`
	// ColdWritesPerApp leaves out Events, which are not part of an
	// application.
	ColdWritesPerApp float64 `json:"coldWritesPerApp"`
	EventsPerApp     float64 `json:"eventsPerApp"`
	// ColdClientWrites is the same from the operator's client metrics (every
	// namespace, the probe resources included).
	ColdClientWrites float64 `json:"coldClientWrites"`
	// QuotaWrites are writes to the per-namespace ResourceQuota
	// (MicroServiceDeploy), part of ColdWrites.
	Memory memory `json:"memoryAfterConverge"`

	RestartSeconds float64 `json:"restartSeconds"`
	// RestartMemory is the restarted operator's memory once it has settled
	// after its pass over every application: its peak RSS is that of a
	// start over N existing applications.
	RestartMemory       memory      `json:"memoryAfterRestart"`
	RestartWrites       auditCounts `json:"restartWrites"`
	RestartClientWrites float64     `json:"restartClientWrites"`

	UpdateSeconds      float64     `json:"updateSeconds"`
	UpdateWrites       auditCounts `json:"updateWrites"`
	UpdateWritesPerApp float64     `json:"updateWritesPerApp"`
	UpdateClientWrites float64     `json:"updateClientWrites"`
	// The probe is one new application created while the cold converge
	// is under way (backlog) and then on the idle operator: seconds until
	// its status observes it, and until it is Ready.
	ProbeBacklogSeconds      float64 `json:"probeBacklogSeconds"`
	ProbeIdleSeconds         float64 `json:"probeIdleSeconds"`
	ProbeRatio               float64 `json:"probeRatio"`
	ProbeBacklogReadySeconds float64 `json:"probeBacklogReadySeconds"`
	ProbeIdleReadySeconds    float64 `json:"probeIdleReadySeconds"`
	ProbeReadyRatio          float64 `json:"probeReadyRatio"`
	// RoundTrip is the median time of a read under the operator's identity
	// (so in its priority level and flow), taken as each probe is created:
	// what any request of the probe's pass waits for the API server.
	RoundTripBacklogMs float64 `json:"roundTripBacklogMs"`
	RoundTripIdleMs    float64 `json:"roundTripIdleMs"`
	// The probes' steps, from the audit log.
	ProbeBacklogSteps probeTimeline `json:"probeBacklogSteps"`
	ProbeIdleSteps    probeTimeline `json:"probeIdleSteps"`
	// BareProbe is the same probe served by the bare client during its
	// own backlog and then idle (full cases): the least the cluster lets
	// any client take, under the load a client as fast as the bare one
	// makes.
	BareProbe *bareProbes `json:"bareProbe,omitempty"`
	// Full is false for a sweep case, which measures only the converge.
	Full bool `json:"full"`
}

// MemoryPoint is the operator's and the informer floors' memory with N
// converged applications.
type MemoryPoint struct {
	N        int    `json:"n"`
	Operator memory `json:"operator"`
	// Floor was started with the N applications converged (it listed
	// them); WatchingFloor ran from N=0 beside the operator (it saw every
	// object arrive and change).
	Floor         memory `json:"floor"`
	WatchingFloor memory `json:"watchingFloor"`
}

// MemoryRamp is the memory scenario.
type MemoryRamp struct {
	Workload string        `json:"workload"`
	Points   []MemoryPoint `json:"points"`
	// Slopes are least-squares fits against N, KiB per app, over the
	// points with N > 0: of the heap in use (the runtime's HeapInuse, the
	// spans that hold a live object, so it counts the free room between
	// them), of the live heap (HeapAlloc after the collection, the bytes of
	// live objects, what a heap profile's inuse_space adds up) and of RSS.
	SlopeKiB                  float64 `json:"heapSlopeKiBPerApp"`
	FloorSlopeKiB             float64 `json:"floorHeapSlopeKiBPerApp"`
	WatchingFloorSlopeKiB     float64 `json:"watchingFloorHeapSlopeKiBPerApp"`
	LiveSlopeKiB              float64 `json:"liveHeapSlopeKiBPerApp"`
	FloorLiveSlopeKiB         float64 `json:"floorLiveHeapSlopeKiBPerApp"`
	WatchingFloorLiveSlopeKiB float64 `json:"watchingFloorLiveHeapSlopeKiBPerApp"`
	RSSSlopeKiB               float64 `json:"rssSlopeKiBPerApp"`
	Unrelated                 int     `json:"unrelatedObjects"`
	// WithUnrelated is measured at the largest N after Unrelated
	// ConfigMaps and Secrets were added.
	WithUnrelated              memory  `json:"operatorWithUnrelated"`
	FloorWithUnrelated         memory  `json:"floorWithUnrelated"`
	WatchingFloorWithUnrelated memory  `json:"watchingFloorWithUnrelated"`
	UnrelatedIncrease          float64 `json:"unrelatedHeapIncreasePercent"`
}

// Results are everything one run measured.
type Results struct {
	Date    time.Time   `json:"date"`
	Machine Machine     `json:"machine"`
	Config  RunConfig   `json:"config"`
	Cases   []Case      `json:"cases"`
	Memory  *MemoryRamp `json:"memory,omitempty"`
}

// RunConfig is the part of Config worth recording.
type RunConfig struct {
	N            []int    `json:"n"`
	Workloads    []string `json:"workloads"`
	Workers      int      `json:"workers"`
	Sweep        []int    `json:"sweep,omitempty"`
	Repeat       int      `json:"repeat"`
	PerNamespace int      `json:"perNamespace"`
	OperatorEnv  []string `json:"operatorEnv,omitempty"`
	OperatorOnly bool     `json:"operatorOnly,omitempty"`
}

// Run runs every case of cfg and returns the results.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.PerNamespace <= 0 {
		cfg.PerNamespace = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	res := &Results{Date: time.Now().UTC(), Machine: machine(), Config: RunConfig{
		N: cfg.N, Workloads: cfg.Workloads, Workers: cfg.Workers, Sweep: cfg.Sweep, Repeat: max(cfg.Repeat, 1), PerNamespace: cfg.PerNamespace,
		OperatorEnv: cfg.OperatorEnv, OperatorOnly: cfg.OperatorOnly,
	}}
	cases, err := plan(cfg)
	if err != nil {
		return res, err
	}
	for _, p := range cases {
		c, err := runCase(ctx, cfg, p.workload, p.n, p.workers, p.full, p.repeat)
		if err != nil {
			return res, fmt.Errorf("%s N=%d workers=%d: %w", p.workload.name, p.n, p.workers, err)
		}
		res.Cases = append(res.Cases, *c)
	}
	if (cfg.Memory || cfg.MemoryOnly) && len(cfg.Workloads) > 0 {
		w := workloads[cfg.Workloads[0]]
		largest := 0
		for _, n := range cfg.N {
			largest = max(largest, n)
		}
		if w.maxN > 0 {
			largest = min(largest, w.maxN)
		}
		m, err := runMemory(ctx, cfg, w, largest)
		if err != nil {
			return res, fmt.Errorf("memory: %w", err)
		}
		res.Memory = m
	}
	res.Machine.LoadAfter = loadAverage()
	return res, nil
}

// plannedCase is one cold converge Run measures (see runCase).
type plannedCase struct {
	workload workload
	n        int
	workers  int
	full     bool // every scenario, not only the cold converge
	repeat   int  // cold converges against the bare client
}

// plan lists the cases of cfg in the order Run measures them: at every
// N, every workload (capped at its maxN) with cfg.Workers, all scenarios;
// the first workload's cold converge repeated cfg.Repeat times; at the
// first N, the first workload again with each other worker count of the
// sweep, its cold converge only. None with MemoryOnly.
func plan(cfg Config) ([]plannedCase, error) {
	for _, name := range cfg.Workloads {
		if _, ok := workloads[name]; !ok {
			return nil, fmt.Errorf("unknown workload %q (known: %v)", name, WorkloadNames())
		}
	}
	if cfg.MemoryOnly {
		return nil, nil
	}
	var out []plannedCase
	for i, n := range cfg.N {
		for j, name := range cfg.Workloads {
			w := workloads[name]
			wn := n
			if w.maxN > 0 && wn > w.maxN {
				wn = w.maxN
			}
			repeat := 1
			if j == 0 {
				repeat = max(cfg.Repeat, 1)
			}
			out = append(out, plannedCase{workload: w, n: wn, workers: cfg.Workers, full: true, repeat: repeat})
			if i > 0 || j > 0 {
				continue
			}
			for _, workers := range cfg.Sweep {
				if workers != cfg.Workers {
					out = append(out, plannedCase{workload: w, n: wn, workers: workers, repeat: 1})
				}
			}
		}
	}
	return out, nil
}

// env is one fresh cluster with the operator's identity in place.
type env struct {
	cfg        Config
	cluster    *cluster.Cluster
	admin      client.Client
	adminCfg   *rest.Config
	kubeconfig string        // the operator's ServiceAccount
	operator   client.Client // with kubeconfig, made on first use
	audit      *auditLog
}

func newEnv(ctx context.Context, cfg Config) (*env, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(cfg.Progress, "Starting a fresh local cluster")
	cl, err := cluster.Start(ctx, cluster.Options{
		Profile:     cluster.Full,
		CRDDir:      filepath.Join(root, "config", "crd", "bases"),
		AuditPolicy: auditPolicy,
		// kube-controller-manager's own client allows 20 requests a second
		// by default: a thousand new Deployments then take minutes to be
		// reported available, which would measure it rather than the
		// operator. Lifted here, so that Ready times reflect the operator.
		ControllerManagerArgs: []string{"--kube-api-qps=1000", "--kube-api-burst=2000"},
	})
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, cluster: cl, adminCfg: cl.Config(), audit: &auditLog{path: cl.AuditLogPath()}}
	e.adminCfg.QPS, e.adminCfg.Burst = -1, 0
	if e.admin, err = client.New(e.adminCfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
		e.close()
		return nil, err
	}
	if err := e.installIdentity(ctx, root); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.cluster.Stop() == nil {
		_ = e.cluster.RemoveDir()
	}
}

// done ends a run with the env: on success it removes the cluster, on error
// *err it stops the cluster but keeps its directory, and names the directory
// in *err.
func (e *env) done(err *error) {
	if *err == nil {
		e.close()
	} else {
		_ = e.cluster.Stop()
		*err = fmt.Errorf("%w (cluster logs in %s)", *err, e.cluster.Dir)
	}
}

// installIdentity creates the operator's ServiceAccount, binds it to the
// generated ClusterRole and writes a kubeconfig holding only its token.
func (e *env) installIdentity(ctx context.Context, root string) error {
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorServiceAccount}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "app-operator-bench"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: operatorServiceAccount}},
		},
	}
	for _, o := range objs {
		if err := e.admin.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	sa, err := e.cluster.ServiceAccountConfig(ctx, operatorNamespace, operatorServiceAccount)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: sa.Host, CertificateAuthorityData: sa.CAData}
	kc.AuthInfos["app-operator"] = &clientcmdapi.AuthInfo{Token: sa.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "app-operator"}
	kc.CurrentContext = "local"
	e.kubeconfig = filepath.Join(e.cluster.Dir, "app-operator.kubeconfig")
	return clientcmd.WriteToFile(*kc, e.kubeconfig)
}

// namespaces creates the namespaces prefix000.. for n applications.
func (e *env) namespaces(ctx context.Context, prefix string, from, n int) ([]string, error) {
	var names []string
	for i := range (n + e.cfg.PerNamespace - 1) / e.cfg.PerNamespace {
		name := fmt.Sprintf("%s%03d", prefix, i)
		names = append(names, name)
		if i*e.cfg.PerNamespace+e.cfg.PerNamespace <= from {
			continue // exists already
		}
		err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	return names, nil
}

// create creates applications from..to-1 of w, spread over namespaces of
// prefix, with 16 concurrent requests.
func (e *env) create(ctx context.Context, w workload, prefix string, from, to int) error {
	if _, err := e.namespaces(ctx, prefix, from, to); err != nil {
		return err
	}
	return parallel(16, from, to, func(i int) error {
		ns := fmt.Sprintf("%s%03d", prefix, i/e.cfg.PerNamespace)
		return e.admin.Create(ctx, w.newObject(ns, fmt.Sprintf("app-%05d", i), i))
	})
}

// parallel runs f(i) for i in [from, to) on workers goroutines.
func parallel(workers, from, to int, f func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (e *env) poll(ctx context.Context, what string, cond func() (bool, string)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, e.cfg.Timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (%s)", what, err, last)
	}
	return nil
}

// quiet waits until the operator has made no mutating request for 3 s.
func (e *env) quiet(ctx context.Context, op *operator) (float64, error) {
	last, since := -1.0, time.Now()
	err := e.poll(ctx, "the operator settles", func() (bool, string) {
		s, err := op.scrape()
		if err != nil {
			return false, err.Error()
		}
		if s.writes != last {
			last, since = s.writes, time.Now()
		}
		return time.Since(since) >= 3*time.Second, fmt.Sprintf("%v writes so far", last)
	})
	return last, err
}

// operatorClient returns a client with the operator's identity.
func (e *env) operatorClient() (client.Client, error) {
	if e.operator == nil {
		cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg.QPS, cfg.Burst = -1, 0
		if e.operator, err = client.New(cfg, client.Options{Scheme: controller.NewScheme()}); err != nil {
			return nil, err
		}
	}
	return e.operator, nil
}

// profileCPU profiles a process's CPU, through the profiler at base (an
// address that serves /debug/pprof/), from now until the returned function
// is called, in consecutive parts of two seconds, and then writes the parts
// merged into one profile at path (the last part runs to its end, so the
// profile runs on for up to two seconds). Calls after the first return the
// first's answer.
func profileCPU(ctx context.Context, hc *http.Client, base, path string) (stop func() error) {
	done := make(chan struct{})
	result := make(chan error, 1)
	stop = sync.OnceValue(func() error {
		close(done)
		return <-result
	})
	go func() {
		var parts []*profile.Profile
		err := func() error {
			for {
				p, err := cpuProfile(ctx, hc, base, 2)
				if err != nil {
					return err
				}
				parts = append(parts, p)
				select {
				case <-done:
					return nil
				default:
				}
			}
		}()
		if err == nil {
			err = writeMerged(path, parts)
		}
		result <- err
	}()
	return stop
}

// profileAPIServer is profileCPU for the API server.
func (e *env) profileAPIServer(ctx context.Context, path string) (stop func() error) {
	hc, err := rest.HTTPClientFor(e.adminCfg)
	if err != nil {
		return func() error { return err }
	}
	return profileCPU(ctx, hc, e.adminCfg.Host, path)
}

// cpuProfile reads a profile of the next seconds of CPU time of the
// process whose profiler is at base.
func cpuProfile(ctx context.Context, hc *http.Client, base string, seconds int) (p *profile.Profile, err error) {
	err = httpGet(ctx, hc, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), func(r io.Reader) error {
		p, err = profile.Parse(r)
		return err
	})
	return p, err
}

// httpGet reads url with hc and hands the body of a 200 answer to read.
func httpGet(ctx context.Context, hc *http.Client, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(resp.Body)
}

// writeMerged writes the profiles merged into one at path.
func writeMerged(path string, parts []*profile.Profile) error {
	p, err := profile.Merge(parts)
	if err != nil {
		return err
	}
	return writeFile(path, p.Write)
}

// roundTrip returns the median milliseconds of five reads of a missing
// resource of the workload's kind, under the operator's identity.
func (e *env) roundTrip(ctx context.Context, w workload) (float64, error) {
	c, err := e.operatorClient()
	if err != nil {
		return 0, err
	}
	ms := make([]float64, 5)
	for i := range ms {
		start := time.Now()
		err := c.Get(ctx, types.NamespacedName{Namespace: probeNamespace, Name: "absent"}, w.newObject("", "", 0))
		if !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("read as the operator: %v", err)
		}
		ms[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	slices.Sort(ms)
	return ms[len(ms)/2], nil
}

// ReadCost is the CPU a read of one missing Deployment cost the API server
// and etcd, in milliseconds, served from storage (no resourceVersion) and
// from the API server's watch cache (resourceVersion "0"): the first pass
// over a new resource reads each of its children from the watch cache.
type ReadCost struct {
	Reads              int     `json:"reads"`
	StorageAPIServerMs float64 `json:"storageAPIServerMs"`
	StorageEtcdMs      float64 `json:"storageEtcdMs"`
	CacheAPIServerMs   float64 `json:"cacheAPIServerMs"`
	CacheEtcdMs        float64 `json:"cacheEtcdMs"`
}

// readCost makes reads reads of missing Deployments under the operator's
// identity, four at a time, first from storage and then from the watch
// cache, and measures the API server's and etcd's CPU for each.
func (e *env) readCost(ctx context.Context, reads int) (*ReadCost, error) {
	c, err := e.operatorClient()
	if err != nil {
		return nil, err
	}
	pids := e.cluster.Pids()
	rc := &ReadCost{Reads: reads}
	for _, rv := range []string{"", "0"} {
		meter, err := startCPU(map[string]int{"kube-apiserver": pids["kube-apiserver"], "etcd": pids["etcd"]})
		if err != nil {
			return nil, err
		}
		opts := &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: rv}}
		if err := parallel(4, 0, reads, func(i int) error {
			err := c.Get(ctx, types.NamespacedName{Namespace: probeNamespace, Name: fmt.Sprintf("absent-%d", i)}, &appsv1.Deployment{}, opts)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("read as the operator: %v", err)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		cpu, err := meter.read()
		if err != nil {
			return nil, err
		}
		apiserver, etcd := cpu["kube-apiserver"]*1000/float64(reads), cpu["etcd"]*1000/float64(reads)
		if rv == "" {
			rc.StorageAPIServerMs, rc.StorageEtcdMs = apiserver, etcd
		} else {
			rc.CacheAPIServerMs, rc.CacheEtcdMs = apiserver, etcd
		}
	}
	return rc, nil
}

// probeTimes waits for the probe application name and returns the seconds
// from created until its status observed it, and until it was Ready.
func (e *env) probeTimes(ctx context.Context, tr *tracker, name string, created time.Time) (float64, float64, error) {
	key := probeNamespace + "/" + name
	if err := e.poll(ctx, name+" Ready", func() (bool, string) {
		_, ok := tr.whenReady(key)
		return ok, name + " not Ready"
	}); err != nil {
		return 0, 0, err
	}
	at, _ := tr.when(key)
	readyAt, _ := tr.whenReady(key)
	return at.Sub(created).Seconds(), readyAt.Sub(created).Seconds(), nil
}

func (e *env) startOperator(workers int) (*operator, error) {
	return startOperator(e.cfg.Operator, e.kubeconfig, filepath.Join(e.cluster.Dir, "logs", "app-operator.log"), workers, e.cfg.OperatorEnv)
}

// Pair is one cold converge of the operator and one of the bare client,
// each on a fresh cluster.
type Pair struct {
	// OperatorStart and BareStart are when each run of the pair began
	// (its cluster's start included).
	OperatorStart   time.Time `json:"operatorStart"`
	BareStart       time.Time `json:"bareStart"`
	BareSeconds     float64   `json:"bareSeconds"`
	ConvergeSeconds float64   `json:"convergeSeconds"`
	Ratio           float64   `json:"ratio"`
	// ConvergeCPU and BareCPU are the CPU seconds each process used over
	// the same spans as ConvergeSeconds and BareSeconds: the cluster's
	// components by name, and "operator" or "client". On a machine the
	// run saturates, their totals explain the times.
	ConvergeCPU map[string]float64 `json:"convergeCPU"`
	BareCPU     map[string]float64 `json:"bareCPU"`
	// CPURatio is the total of ConvergeCPU over the total of BareCPU.
	CPURatio float64 `json:"cpuRatio"`
	// ConvergeRequests and BareRequests are the requests the API server
	// served over the same spans, from every client.
	ConvergeRequests apiRequests `json:"convergeRequests"`
	BareRequests     apiRequests `json:"bareRequests"`
}

// cpuTotal is the sum of the CPU seconds of every process.
func cpuTotal(cpu map[string]float64) float64 {
	var t float64
	for _, s := range cpu {
		t += s
	}
	return t
}

// runCase measures the operator (every scenario when full, else the cold
// converge) and the bare client, and repeats the cold converges of both
// repeat-1 more times.
func runCase(ctx context.Context, cfg Config, w workload, n, workers int, full bool, repeat int) (*Case, error) {
	fmt.Fprintf(cfg.Progress, "Case %s N=%d workers=%d\n", w.name, n, workers)
	if cfg.OperatorOnly {
		return runOperator(ctx, cfg, w, n, workers, full)
	}
	var c *Case
	ratios := make([]float64, 0, repeat)
	for r := range max(repeat, 1) {
		if r > 0 {
			fmt.Fprintf(cfg.Progress, "  repeat %d of %d\n", r+1, repeat)
		}
		// Every other pair runs the bare client first: a machine whose
		// speed drifts during the run (shared cores) then favours neither
		// side in the median.
		var (
			op                 *Case
			bare               bareRun
			opStart, bareStart time.Time
		)
		runs := []func() error{
			func() (err error) {
				opStart = time.Now()
				op, err = runOperator(ctx, cfg, w, n, workers, full && r == 0)
				return err
			},
			func() (err error) {
				bareStart = time.Now()
				bare, err = runBare(ctx, cfg, w, n, workers, full && r == 0)
				return err
			},
		}
		if r%2 == 1 {
			slices.Reverse(runs)
		}
		for _, run := range runs {
			if err := run(); err != nil {
				return nil, err
			}
		}
		if r == 0 {
			c = op
			c.BareSeconds, c.BareWrites = bare.seconds, bare.writes
			if c.Full {
				c.BareProbe = &bare.probe
			}
		}
		p := Pair{
			OperatorStart: opStart, BareStart: bareStart,
			BareSeconds: bare.seconds, ConvergeSeconds: op.ConvergeSeconds, Ratio: op.ConvergeSeconds / bare.seconds,
			ConvergeCPU: op.ConvergeCPU, BareCPU: bare.cpu, CPURatio: cpuTotal(op.ConvergeCPU) / cpuTotal(bare.cpu),
			ConvergeRequests: op.ConvergeRequests, BareRequests: bare.requests,
		}
		c.Pairs = append(c.Pairs, p)
		ratios = append(ratios, p.Ratio)
	}
	c.ConvergeRatio = median(ratios)
	return c, nil
}

// median returns the middle value of xs (the mean of the middle two when
// there is an even number); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// runOperator measures the operator's scenarios on a fresh cluster.
func runOperator(ctx context.Context, cfg Config, w workload, n, workers int, full bool) (_ *Case, err error) {
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.done(&err)
	c := &Case{Workload: w.name, N: n, Workers: workers, Full: full, Namespaces: (n + cfg.PerNamespace - 1) / cfg.PerNamespace}
	acs, err := controller.Build(w.newObject("x", "app-00000", 0), controller.Options{})
	if err != nil {
		return nil, err
	}
	c.Children = len(acs)

	// Cold converge: N resources exist, then the operator starts.
	if err := e.create(ctx, w, opPrefix, 0, n); err != nil {
		return nil, err
	}
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}); err != nil {
		return nil, err
	}
	tr, err := newTracker(ctx, e.adminCfg, w.gvr)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	e.audit.mark()
	fmt.Fprintln(cfg.Progress, "  cold converge")
	clusterCPU, err := startCPU(e.cluster.Pids())
	if err != nil {
		return nil, err
	}
	requests, err := e.apiRequests(ctx)
	if err != nil {
		return nil, err
	}
	op, err := e.startOperator(workers)
	if err != nil {
		return nil, err
	}
	defer func() { _ = op.stop() }()
	// Where the operator and the API server spend their CPU during the
	// cold converge.
	stopProfiles := func() error { return nil }
	if full && cfg.ProfileDir != "" {
		stopOperator := profileCPU(ctx, http.DefaultClient, op.pprof, filepath.Join(cfg.ProfileDir, fmt.Sprintf("cpu-%s-%d.pprof", w.name, n)))
		stopAPIServer := e.profileAPIServer(ctx, filepath.Join(cfg.ProfileDir, fmt.Sprintf("apiserver-cpu-%s-%d.pprof", w.name, n)))
		stopProfiles = func() error { return errors.Join(stopOperator(), stopAPIServer()) }
		defer func() { _ = stopProfiles() }()
	}
	// A new resource while the backlog is being worked through: created
	// once a tenth of the backlog has converged, so that the operator's
	// start-up is not part of its time.
	var probeCreated time.Time
	if full {
		if err := e.poll(ctx, "the cold converge starts", func() (bool, string) {
			got, _ := tr.count(opPrefix)
			return got >= max(1, n/10), fmt.Sprintf("%d of %d converged", got, n)
		}); err != nil {
			return nil, err
		}
		probeCreated = time.Now()
		if err := e.admin.Create(ctx, w.newObject(probeNamespace, "probe-backlog", 0)); err != nil {
			return nil, err
		}
		if c.RoundTripBacklogMs, err = e.roundTrip(ctx, w); err != nil {
			return nil, err
		}
	}
	if err := e.poll(ctx, "cold converge", func() (bool, string) {
		got, _ := tr.count(opPrefix)
		return got == n, fmt.Sprintf("%d of %d converged", got, n)
	}); err != nil {
		return nil, err
	}
	if c.ConvergeCPU, err = clusterCPU.read(); err != nil {
		return nil, err
	}
	after, err := e.apiRequests(ctx)
	if err != nil {
		return nil, err
	}
	c.ConvergeRequests = after.since(requests)
	if c.ConvergeCPU["operator"], err = cpuSeconds(op.cmd.Process.Pid); err != nil {
		return nil, err
	}
	_, last := tr.count(opPrefix)
	c.ConvergeSeconds = last.Sub(op.started).Seconds()
	c.FirstSeconds = tr.first(opPrefix).Sub(op.started).Seconds()
	if err := stopProfiles(); err != nil {
		return nil, fmt.Errorf("CPU profiles: %w", err)
	}
	if err := e.poll(ctx, "every application Ready", func() (bool, string) {
		got, _ := tr.countReady(opPrefix)
		return got == n, fmt.Sprintf("%d of %d Ready", got, n)
	}); err != nil {
		return nil, err
	}
	_, last = tr.countReady(opPrefix)
	c.ReadySeconds = last.Sub(op.started).Seconds()
	if full {
		if c.ProbeBacklogSeconds, c.ProbeBacklogReadySeconds, err = e.probeTimes(ctx, tr, "probe-backlog", probeCreated); err != nil {
			return nil, err
		}
		if c.ProbeBacklogSteps, err = e.audit.probe("probe-backlog", probeCreated); err != nil {
			return nil, err
		}
	}
	if c.ColdClientWrites, err = e.quiet(ctx, op); err != nil {
		return nil, err
	}
	if c.ColdWrites, err = e.audit.since(opPrefix); err != nil {
		return nil, err
	}
	s, err := op.scrape()
	if err != nil {
		return nil, err
	}
	c.ColdPassesPerApp = s.reconciles[w.controller] / float64(n)
	if !e.audit.lastChild.IsZero() {
		c.ChildrenSeconds = e.audit.lastChild.Sub(op.started).Seconds()
	}
	c.ColdWritesPerApp = float64(c.ColdWrites.without("events")) / float64(n)
	c.EventsPerApp = float64(c.ColdWrites.total()-c.ColdWrites.without("events")) / float64(n)
	if c.Memory, err = op.memory(); err != nil {
		return nil, err
	}

	if full {
		// The same new resource on an idle operator.
		probeCreated = time.Now()
		if err := e.admin.Create(ctx, w.newObject(probeNamespace, "probe-idle", 0)); err != nil {
			return nil, err
		}
		if c.RoundTripIdleMs, err = e.roundTrip(ctx, w); err != nil {
			return nil, err
		}
		if c.ProbeIdleSeconds, c.ProbeIdleReadySeconds, err = e.probeTimes(ctx, tr, "probe-idle", probeCreated); err != nil {
			return nil, err
		}
		if c.ProbeIdleSteps, err = e.audit.probe("probe-idle", probeCreated); err != nil {
			return nil, err
		}
		c.ProbeRatio = c.ProbeBacklogSeconds / c.ProbeIdleSeconds
		c.ProbeReadyRatio = c.ProbeBacklogReadySeconds / c.ProbeIdleReadySeconds
		if _, err := e.quiet(ctx, op); err != nil {
			return nil, err
		}

		// Restart over converged applications: every one gets a pass.
		fmt.Fprintln(cfg.Progress, "  restart")
		if err := op.stop(); err != nil {
			return nil, err
		}
		e.audit.mark()
		if op, err = e.startOperator(workers); err != nil {
			return nil, err
		}
		want := float64(n + 2)
		if err := e.poll(ctx, "a pass over every resource after the restart", func() (bool, string) {
			s, err := op.scrape()
			if err != nil {
				return false, err.Error()
			}
			return s.reconciles[w.controller] >= want, fmt.Sprintf("%v of %v passes", s.reconciles[w.controller], want)
		}); err != nil {
			return nil, err
		}
		c.RestartSeconds = time.Since(op.started).Seconds()
		if c.RestartClientWrites, err = e.quiet(ctx, op); err != nil {
			return nil, err
		}
		if c.RestartMemory, err = op.memory(); err != nil {
			return nil, err
		}
		if c.RestartWrites, err = e.audit.since(""); err != nil {
			return nil, err
		}

		// Update fan-out: one spec field changed on every application.
		fmt.Fprintln(cfg.Progress, "  update fan-out")
		before, err := op.scrape()
		if err != nil {
			return nil, err
		}
		tr.reset(2)
		e.audit.mark()
		start := time.Now()
		if err := parallel(16, 0, n, func(i int) error {
			o := w.newObject(fmt.Sprintf("%s%03d", opPrefix, i/cfg.PerNamespace), fmt.Sprintf("app-%05d", i), i)
			return e.admin.Patch(ctx, o, client.RawPatch(types.MergePatchType, w.update))
		}); err != nil {
			return nil, err
		}
		if err := e.poll(ctx, "update fan-out", func() (bool, string) {
			got, _ := tr.count(opPrefix)
			return got == n, fmt.Sprintf("%d of %d converged", got, n)
		}); err != nil {
			return nil, err
		}
		_, last = tr.count(opPrefix)
		c.UpdateSeconds = last.Sub(start).Seconds()
		after, err := e.quiet(ctx, op)
		if err != nil {
			return nil, err
		}
		c.UpdateClientWrites = after - before.writes
		if c.UpdateWrites, err = e.audit.since(opPrefix); err != nil {
			return nil, err
		}
		c.UpdateWritesPerApp = float64(c.UpdateWrites.without("events")) / float64(n)

		fmt.Fprintln(cfg.Progress, "  read cost")
		if c.ReadCost, err = e.readCost(ctx, 2000); err != nil {
			return nil, err
		}
	}
	if err := op.stop(); err != nil {
		return nil, err
	}
	return c, nil
}

// bareRun is what one run of the bare client measured.
type bareRun struct {
	seconds  float64
	writes   int64
	cpu      map[string]float64 // as Pair.BareCPU
	requests apiRequests        // as Pair.BareRequests
	probe    bareProbes
}

// bareProbes are the bare client's probes (see bareProbe), as the
// operator's are measured: created once a tenth of the backlog has its
// status, and again once the cluster is idle.
type bareProbes struct {
	BacklogSeconds     float64       `json:"backlogSeconds"`
	IdleSeconds        float64       `json:"idleSeconds"`
	Ratio              float64       `json:"ratio"`
	BacklogSteps       probeTimeline `json:"backlogSteps"`
	IdleSteps          probeTimeline `json:"idleSteps"`
	RoundTripBacklogMs float64       `json:"roundTripBacklogMs"`
	RoundTripIdleMs    float64       `json:"roundTripIdleMs"`
}

// runBare measures the bare client on a fresh cluster holding what the
// operator's started with: n applications and nothing else. With full, it
// also profiles the API server's CPU as runOperator does, and measures the
// bare client's probes.
func runBare(ctx context.Context, cfg Config, w workload, n, workers int, full bool) (_ bareRun, err error) {
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return bareRun{}, err
	}
	defer e.done(&err)
	fmt.Fprintln(cfg.Progress, "  bare client")
	if err := e.create(ctx, w, barePrefix, 0, n); err != nil {
		return bareRun{}, err
	}
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}); err != nil {
		return bareRun{}, err
	}
	var nss []string
	for i := range (n + cfg.PerNamespace - 1) / cfg.PerNamespace {
		nss = append(nss, fmt.Sprintf("%s%03d", barePrefix, i))
	}
	// The same watch as in the operator's run times the bare client: it
	// loads both clusters alike, and both end when it sees the last status.
	tr, err := newTracker(ctx, e.adminCfg, w.gvr)
	if err != nil {
		return bareRun{}, err
	}
	defer tr.stop()
	clusterCPU, err := startCPU(e.cluster.Pids())
	if err != nil {
		return bareRun{}, err
	}
	requests, err := e.apiRequests(ctx)
	if err != nil {
		return bareRun{}, err
	}
	stopAPIServerProfile := func() error { return nil }
	if full && cfg.ProfileDir != "" {
		stopAPIServerProfile = e.profileAPIServer(ctx, filepath.Join(cfg.ProfileDir, fmt.Sprintf("apiserver-cpu-%s-%d-bare.pprof", w.name, n)))
		defer func() { _ = stopAPIServerProfile() }()
	}
	var (
		run        bareRun
		probeErr   = make(chan error, 1)
		probeStart time.Time
	)
	if full {
		// The probe during the backlog, beside the bare client.
		go func() {
			probeErr <- func() error {
				if err := e.poll(ctx, "the bare client starts", func() (bool, string) {
					got, _ := tr.count(barePrefix)
					return got >= max(1, n/10), fmt.Sprintf("%d of %d seen", got, n)
				}); err != nil {
					return err
				}
				var err error
				if run.probe.RoundTripBacklogMs, err = e.roundTrip(ctx, w); err != nil {
					return err
				}
				probeStart, err = e.runBareProbe(ctx, w, "probe-backlog")
				return err
			}()
		}()
	}
	var br bareResult
	start := time.Now()
	clientCPU, err := runRole(ctx, cfg.Self, []string{
		RoleEnv + "=bare", "BENCH_KUBECONFIG=" + e.kubeconfig, "BENCH_WORKLOAD=" + w.name,
		"BENCH_WORKERS=" + fmt.Sprint(workers), "BENCH_NAMESPACES=" + joinComma(nss),
	}, filepath.Join(e.cluster.Dir, "logs", "bare.log"), &br)
	if err != nil {
		return bareRun{}, err
	}
	if br.Apps != n {
		return bareRun{}, fmt.Errorf("the bare client found %d applications, want %d", br.Apps, n)
	}
	if err := e.poll(ctx, "the bare client's statuses", func() (bool, string) {
		got, _ := tr.count(barePrefix)
		return got == n, fmt.Sprintf("%d of %d seen", got, n)
	}); err != nil {
		return bareRun{}, err
	}
	cpu, err := clusterCPU.read()
	if err != nil {
		return bareRun{}, err
	}
	cpu["client"] = clientCPU
	after, err := e.apiRequests(ctx)
	if err != nil {
		return bareRun{}, err
	}
	run.requests = after.since(requests)
	if err := stopAPIServerProfile(); err != nil {
		return bareRun{}, fmt.Errorf("API server CPU profile: %w", err)
	}
	_, last := tr.count(barePrefix)
	run.seconds, run.writes, run.cpu = last.Sub(start).Seconds(), br.Writes, cpu
	if full {
		if err := <-probeErr; err != nil {
			return bareRun{}, fmt.Errorf("bare probe in the backlog: %w", err)
		}
		if err := e.bareProbeTimes(ctx, tr, "probe-backlog", probeStart, &run.probe.BacklogSeconds, &run.probe.BacklogSteps); err != nil {
			return bareRun{}, err
		}
		// The same on an idle cluster: once the Deployment controller has
		// reported on every Deployment of the backlog.
		if err := e.poll(ctx, "every rollout of the bare client's run reported", func() (bool, string) {
			return e.rolledOut(ctx)
		}); err != nil {
			return bareRun{}, err
		}
		if run.probe.RoundTripIdleMs, err = e.roundTrip(ctx, w); err != nil {
			return bareRun{}, err
		}
		if probeStart, err = e.runBareProbe(ctx, w, "probe-idle"); err != nil {
			return bareRun{}, fmt.Errorf("bare probe on the idle cluster: %w", err)
		}
		if err := e.bareProbeTimes(ctx, tr, "probe-idle", probeStart, &run.probe.IdleSeconds, &run.probe.IdleSteps); err != nil {
			return bareRun{}, err
		}
		run.probe.Ratio = run.probe.BacklogSeconds / run.probe.IdleSeconds
	}
	return run, nil
}

// bareProbeTimes reads the seconds from created until the bare probe name's
// status was seen, and its steps from the audit log.
func (e *env) bareProbeTimes(ctx context.Context, tr *tracker, name string, created time.Time, seconds *float64, steps *probeTimeline) (err error) {
	if *seconds, _, err = e.probeTimes(ctx, tr, name, created); err != nil {
		return err
	}
	*steps, err = e.audit.probe(name, created)
	return err
}

// rolledOut reports whether every Deployment in the cluster has finished
// its rollout, and if not, how many have not.
func (e *env) rolledOut(ctx context.Context) (bool, string) {
	list := &appsv1.DeploymentList{}
	if err := e.admin.List(ctx, list); err != nil {
		return false, err.Error()
	}
	pending := 0
	for i := range list.Items {
		if ok, _ := testenv.RolledOut(&list.Items[i]); !ok {
			pending++
		}
	}
	return pending == 0, fmt.Sprintf("%d of %d Deployments not rolled out", pending, len(list.Items))
}

// runMemory grows the number of applications in steps up to n with one
// operator running, and reads its memory and the informer floor's at each.
func runMemory(ctx context.Context, cfg Config, w workload, n int) (_ *MemoryRamp, err error) {
	fmt.Fprintf(cfg.Progress, "Memory %s up to N=%d\n", w.name, n)
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.done(&err)
	tr, err := newTracker(ctx, e.adminCfg, w.gvr)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	op, err := e.startOperator(cfg.Workers)
	if err != nil {
		return nil, err
	}
	defer func() { _ = op.stop() }()
	wf, err := startWatchingFloor(cfg.Self, e.kubeconfig, filepath.Join(e.cluster.Dir, "logs", "watching-floor.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = wf.stop() }()
	m := &MemoryRamp{Workload: w.name, Unrelated: cfg.Unrelated}
	// measure reads both memories; with a profile name, it also saves
	// both heap profiles in cfg.ProfileDir (<name>.pprof and
	// <name>-floor.pprof).
	measure := func(name string) (MemoryPoint, error) {
		var p MemoryPoint
		if _, err := e.quiet(ctx, op); err != nil {
			return p, err
		}
		var err error
		if p.Operator, err = op.memory(); err != nil {
			return p, err
		}
		if p.WatchingFloor, err = wf.memory(); err != nil {
			return p, err
		}
		env := []string{RoleEnv + "=floor", "BENCH_KUBECONFIG=" + e.kubeconfig}
		if name != "" && cfg.ProfileDir != "" {
			if err := op.saveHeapProfile(filepath.Join(cfg.ProfileDir, name+".pprof")); err != nil {
				return p, err
			}
			env = append(env, "BENCH_HEAP_PROFILE="+filepath.Join(cfg.ProfileDir, name+"-floor.pprof"))
		}
		_, err = runRole(ctx, cfg.Self, env, filepath.Join(e.cluster.Dir, "logs", "floor.log"), &p.Floor)
		return p, err
	}
	have := 0
	for _, step := range []int{0, n / 4, n / 2, 3 * n / 4, n} {
		if step < have || (step == have && step > 0) {
			continue
		}
		if err := e.create(ctx, w, opPrefix, have, step); err != nil {
			return nil, err
		}
		have = step
		if err := e.poll(ctx, "converge", func() (bool, string) {
			got, _ := tr.count(opPrefix)
			return got == step, fmt.Sprintf("%d of %d converged", got, step)
		}); err != nil {
			return nil, err
		}
		name := ""
		if step == n {
			name = fmt.Sprintf("heap-%d", n)
		}
		p, err := measure(name)
		if err != nil {
			return nil, err
		}
		p.N = step
		m.Points = append(m.Points, p)
		fmt.Fprintf(cfg.Progress, "  N=%d heap %.1f MiB, RSS %.1f MiB, peak RSS %.1f MiB; floor heap %.1f MiB, watching floor heap %.1f MiB\n", step,
			mib(p.Operator.HeapInuse), mib(p.Operator.RSS), mib(p.Operator.PeakRSS), mib(p.Floor.HeapInuse), mib(p.WatchingFloor.HeapInuse))
	}
	// The fit leaves out N=0: the first applications pay one-time costs
	// (the first pass of each code path, the apply type converter, work
	// queues growing) that are not per application.
	var xs, heap, floor, watching, live, floorLive, watchingLive, rssv []float64
	for _, p := range m.Points {
		if p.N == 0 {
			continue
		}
		xs = append(xs, float64(p.N))
		heap = append(heap, float64(p.Operator.HeapInuse))
		floor = append(floor, float64(p.Floor.HeapInuse))
		live = append(live, float64(p.Operator.HeapAlloc))
		floorLive = append(floorLive, float64(p.Floor.HeapAlloc))
		watching = append(watching, float64(p.WatchingFloor.HeapInuse))
		watchingLive = append(watchingLive, float64(p.WatchingFloor.HeapAlloc))
		rssv = append(rssv, float64(p.Operator.RSS))
	}
	m.SlopeKiB, m.FloorSlopeKiB, m.RSSSlopeKiB = slope(xs, heap)/1024, slope(xs, floor)/1024, slope(xs, rssv)/1024
	m.LiveSlopeKiB, m.FloorLiveSlopeKiB = slope(xs, live)/1024, slope(xs, floorLive)/1024
	m.WatchingFloorSlopeKiB, m.WatchingFloorLiveSlopeKiB = slope(xs, watching)/1024, slope(xs, watchingLive)/1024

	if cfg.Unrelated > 0 {
		fmt.Fprintf(cfg.Progress, "  %d unrelated ConfigMaps and Secrets\n", cfg.Unrelated)
		perNS := 1000
		for i := range (cfg.Unrelated + perNS - 1) / perNS {
			if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-unrelated-%02d", i)}}); err != nil {
				return nil, err
			}
		}
		payload := string(make([]byte, 0))
		for range 512 {
			payload += "x"
		}
		if err := parallel(16, 0, cfg.Unrelated, func(i int) error {
			meta := metav1.ObjectMeta{Namespace: fmt.Sprintf("bench-unrelated-%02d", i/perNS), Name: fmt.Sprintf("unrelated-%05d", i)}
			if i%2 == 0 {
				return e.admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": payload}})
			}
			return e.admin.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": payload}})
		}); err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Second)
		p, err := measure("")
		if err != nil {
			return nil, err
		}
		m.WithUnrelated, m.FloorWithUnrelated, m.WatchingFloorWithUnrelated = p.Operator, p.Floor, p.WatchingFloor
		lastPoint := m.Points[len(m.Points)-1]
		m.UnrelatedIncrease = 100 * float64(p.Operator.HeapInuse-lastPoint.Operator.HeapInuse) / float64(lastPoint.Operator.HeapInuse)
	}
	return m, nil
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
