package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/test/testenv"
)

// The bare client's run: the least the cold converge needs, on a cluster
// holding the same applications, and its probes.

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
		run          bareRun
		backlogProbe func() (time.Time, error)
	)
	if full {
		backlogProbe = e.startBareBacklogProbe(ctx, tr, w, n, &run.probe.RoundTripBacklogMs)
	}
	start := time.Now()
	br, clientCPU, err := e.runBareClient(ctx, tr, w, n, workers)
	if err != nil {
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
		probeStart, err := backlogProbe()
		if err != nil {
			return bareRun{}, fmt.Errorf("bare probe in the backlog: %w", err)
		}
		if err := e.bareProbeTimes(ctx, tr, "probe-backlog", probeStart, &run.probe.BacklogSeconds, &run.probe.BacklogSteps); err != nil {
			return bareRun{}, err
		}
		if err := e.bareIdleProbe(ctx, tr, w, &run.probe); err != nil {
			return bareRun{}, err
		}
	}
	return run, nil
}

// runBareClient runs the bare client over the n applications with workers
// requests at a time, and waits until the watch has seen the status it
// wrote for every one. It returns what the client reported and the CPU
// seconds it used.
func (e *env) runBareClient(ctx context.Context, tr *tracker, w workload, n, workers int) (bareResult, float64, error) {
	nss := make([]string, 0, (n+e.cfg.PerNamespace-1)/e.cfg.PerNamespace)
	for i := range cap(nss) {
		nss = append(nss, fmt.Sprintf("%s%03d", barePrefix, i))
	}
	var br bareResult
	clientCPU, err := runRole(ctx, e.cfg.Self, []string{
		RoleEnv + "=bare", "BENCH_KUBECONFIG=" + e.kubeconfig, "BENCH_WORKLOAD=" + w.name,
		"BENCH_WORKERS=" + fmt.Sprint(workers), "BENCH_NAMESPACES=" + joinComma(nss),
	}, filepath.Join(e.cluster.Dir, "logs", "bare.log"), &br)
	if err != nil {
		return bareResult{}, 0, err
	}
	if br.Apps != n {
		return bareResult{}, 0, fmt.Errorf("the bare client found %d applications, want %d", br.Apps, n)
	}
	if err := e.poll(ctx, "the bare client's statuses", func() (bool, string) {
		got, _ := tr.count(barePrefix)
		return got == n, fmt.Sprintf("%d of %d seen", got, n)
	}); err != nil {
		return bareResult{}, 0, err
	}
	return br, clientCPU, nil
}

// startBareBacklogProbe serves the probe during the bare client's backlog,
// beside it: once a tenth of the applications have their status, it
// measures the round trip under the operator's identity into *roundTripMs,
// then creates and serves probe-backlog. The returned function waits for
// the probe and returns when it was created.
func (e *env) startBareBacklogProbe(ctx context.Context, tr *tracker, w workload, n int, roundTripMs *float64) (wait func() (time.Time, error)) {
	var (
		probeErr   = make(chan error, 1)
		probeStart time.Time
	)
	go func() {
		probeErr <- func() error {
			if err := e.poll(ctx, "the bare client starts", func() (bool, string) {
				got, _ := tr.count(barePrefix)
				return got >= max(1, n/10), fmt.Sprintf("%d of %d seen", got, n)
			}); err != nil {
				return err
			}
			var err error
			if *roundTripMs, err = e.roundTrip(ctx, w); err != nil {
				return err
			}
			probeStart, err = e.runBareProbe(ctx, w, "probe-backlog")
			return err
		}()
	}()
	return func() (time.Time, error) {
		err := <-probeErr
		return probeStart, err
	}
}

// bareIdleProbe serves the same probe as in the backlog on the idle
// cluster, once the Deployment controller has reported on every Deployment
// of the backlog, and times it against the probe in the backlog.
func (e *env) bareIdleProbe(ctx context.Context, tr *tracker, w workload, p *bareProbes) error {
	if err := e.poll(ctx, "every rollout of the bare client's run reported", func() (bool, string) {
		return e.rolledOut(ctx)
	}); err != nil {
		return err
	}
	var err error
	if p.RoundTripIdleMs, err = e.roundTrip(ctx, w); err != nil {
		return err
	}
	probeStart, err := e.runBareProbe(ctx, w, "probe-idle")
	if err != nil {
		return fmt.Errorf("bare probe on the idle cluster: %w", err)
	}
	if err := e.bareProbeTimes(ctx, tr, "probe-idle", probeStart, &p.IdleSeconds, &p.IdleSteps); err != nil {
		return err
	}
	p.Ratio = p.BacklogSeconds / p.IdleSeconds
	return nil
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
