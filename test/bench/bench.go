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
	"fmt"
	"io"
	"slices"
	"time"
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
	// Cgroup runs the operator in a memory cgroup of its own, made under
	// the benchmark's (root, cgroup v1, or v2 with the memory controller
	// enabled for the benchmark's children), and reads its memory as the
	// kubelet does (see cgroupMemory) beside the process's RSS.
	Cgroup bool
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
	// ConvergePeakRSS is the operator's largest RSS from its start until
	// the cold converge ends (VmHWM, read as soon as every status observes
	// its generation): the start-up, the caches' first lists and the
	// passes, before anything the benchmark asks of it afterwards.
	ConvergePeakRSS int64 `json:"convergePeakRSSBytes"`
	// ConvergeCgroup is the operator's cgroup read with ConvergePeakRSS
	// (with Config.Cgroup): its working set then, and the peak of its
	// usage from the operator's start.
	ConvergeCgroup *cgroupMemory `json:"convergeCgroup,omitempty"`
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
	// Memory is the operator's memory once it has settled after the cold
	// converge.
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
	Cgroup       bool     `json:"cgroup,omitempty"`
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
		OperatorEnv: cfg.OperatorEnv, OperatorOnly: cfg.OperatorOnly, Cgroup: cfg.Cgroup,
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
