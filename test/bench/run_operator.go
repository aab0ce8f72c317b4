package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/controller"
)

// The operator's scenarios on one cluster: the cold converge and its probe
// in the backlog, the probe on the idle operator, the restart, the update
// fan-out and the read cost.

// runOperator measures the operator's scenarios on a fresh cluster, one
// after the other on the same applications: the cold converge and, when
// full, the probe on the idle operator, the restart, the update fan-out and
// the read cost.
func runOperator(ctx context.Context, cfg Config, w workload, n, workers int, full bool) (_ *Case, err error) {
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.done(&err)
	r := &operatorRun{e: e, cfg: cfg, w: w, n: n, workers: workers, full: full}
	r.c = &Case{Workload: w.name, N: n, Workers: workers, Full: full, Namespaces: (n + cfg.PerNamespace - 1) / cfg.PerNamespace}
	acs, err := controller.Build(w.newObject("x", "app-00000", 0), controller.Options{})
	if err != nil {
		return nil, err
	}
	r.c.Children = len(acs)

	// Cold converge: N resources exist, then the operator starts.
	if err := e.create(ctx, w, opPrefix, 0, n); err != nil {
		return nil, err
	}
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}); err != nil {
		return nil, err
	}
	if r.tr, err = newTracker(ctx, e.adminCfg, w.gvr); err != nil {
		return nil, err
	}
	defer r.tr.stop()
	clusterCPU, requests, err := r.startMeters(ctx)
	if err != nil {
		return nil, err
	}
	if r.op, err = e.startOperator(workers); err != nil {
		return nil, err
	}
	// The restart replaces r.op: this stops the operator running last.
	defer func() { _ = r.op.stop() }()
	if err := r.coldConverge(ctx, clusterCPU, requests); err != nil {
		return nil, err
	}

	if full {
		if err := r.idleProbe(ctx); err != nil {
			return nil, err
		}
		if err := r.restart(ctx); err != nil {
			return nil, err
		}
		if err := r.updateFanOut(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintln(cfg.Progress, "  read cost")
		if r.c.ReadCost, err = e.readCost(ctx, 2000); err != nil {
			return nil, err
		}
	}
	if err := r.op.stop(); err != nil {
		return nil, err
	}
	return r.c, nil
}

// operatorRun is one run of the operator's scenarios: its cluster, the
// case it fills in, the watch on the applications and the operator
// process, which the restart replaces.
type operatorRun struct {
	e       *env
	cfg     Config
	w       workload
	n       int
	workers int
	full    bool
	c       *Case
	tr      *tracker
	op      *operator
}

// startMeters marks the audit log and starts counting the cluster's CPU and
// the API server's requests, just before the operator starts: the cold
// converge's writes, CPU and requests are counted from here.
func (r *operatorRun) startMeters(ctx context.Context) (*cpuMeter, apiRequests, error) {
	r.e.audit.mark()
	fmt.Fprintln(r.cfg.Progress, "  cold converge")
	clusterCPU, err := startCPU(r.e.cluster.Pids())
	if err != nil {
		return nil, nil, err
	}
	requests, err := r.e.apiRequests(ctx)
	if err != nil {
		return nil, nil, err
	}
	return clusterCPU, requests, nil
}

// coldConverge measures the cold converge of the operator just started:
// how long it takes until the first and the last application converge and
// until every one is Ready, the CPU and the API requests it takes, and
// (when full) how soon a new application is served in its backlog; then,
// once the operator has settled, its writes, its passes per application and
// its memory.
func (r *operatorRun) coldConverge(ctx context.Context, clusterCPU *cpuMeter, requests apiRequests) error {
	// Where the operator and the API server spend their CPU during the
	// cold converge.
	stopProfiles := r.profileColdConverge(ctx)
	defer func() { _ = stopProfiles() }()
	// A new resource while the backlog is being worked through: created
	// once a tenth of the backlog has converged, so that the operator's
	// start-up is not part of its time.
	var probeCreated time.Time
	if r.full {
		if err := r.e.poll(ctx, "the cold converge starts", func() (bool, string) {
			got, _ := r.tr.count(opPrefix)
			return got >= max(1, r.n/10), fmt.Sprintf("%d of %d converged", got, r.n)
		}); err != nil {
			return err
		}
		var err error
		if probeCreated, r.c.RoundTripBacklogMs, err = r.createProbe(ctx, "probe-backlog"); err != nil {
			return err
		}
	}
	if err := r.waitConverged(ctx, clusterCPU, requests); err != nil {
		return err
	}
	if err := stopProfiles(); err != nil {
		return fmt.Errorf("CPU profiles: %w", err)
	}
	if err := r.waitReady(ctx); err != nil {
		return err
	}
	if r.full {
		if err := r.timeProbe(ctx, "probe-backlog", probeCreated, &r.c.ProbeBacklogSeconds, &r.c.ProbeBacklogReadySeconds, &r.c.ProbeBacklogSteps); err != nil {
			return err
		}
	}
	return r.coldCosts(ctx)
}

// profileColdConverge profiles the operator's CPU and the API server's
// into cfg.ProfileDir (full cases only) until the returned function is
// called; without profiles that function does nothing.
func (r *operatorRun) profileColdConverge(ctx context.Context) (stop func() error) {
	if !r.full || r.cfg.ProfileDir == "" {
		return func() error { return nil }
	}
	stopOperator := profileCPU(ctx, http.DefaultClient, r.op.pprof, filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("cpu-%s-%d.pprof", r.w.name, r.n)))
	stopAPIServer := r.e.profileAPIServer(ctx, filepath.Join(r.cfg.ProfileDir, fmt.Sprintf("apiserver-cpu-%s-%d.pprof", r.w.name, r.n)))
	return func() error { return errors.Join(stopOperator(), stopAPIServer()) }
}

// waitConverged waits until every application has converged, and measures
// the cold converge: its time from the operator's start to the first and
// to the last application converged, and the CPU and the API requests it
// took.
func (r *operatorRun) waitConverged(ctx context.Context, clusterCPU *cpuMeter, requests apiRequests) error {
	c := r.c
	if err := r.e.poll(ctx, "cold converge", func() (bool, string) {
		got, _ := r.tr.count(opPrefix)
		return got == r.n, fmt.Sprintf("%d of %d converged", got, r.n)
	}); err != nil {
		return err
	}
	var atConverge memory
	if err := readRSS(r.op.cmd.Process.Pid, &atConverge); err != nil {
		return err
	}
	c.ConvergePeakRSS = atConverge.PeakRSS
	if err := r.op.readCgroup(&atConverge); err != nil {
		return err
	}
	c.ConvergeCgroup = atConverge.Cgroup
	var err error
	if c.ConvergeCPU, err = clusterCPU.read(); err != nil {
		return err
	}
	after, err := r.e.apiRequests(ctx)
	if err != nil {
		return err
	}
	c.ConvergeRequests = after.since(requests)
	if c.ConvergeCPU["operator"], err = cpuSeconds(r.op.cmd.Process.Pid); err != nil {
		return err
	}
	_, last := r.tr.count(opPrefix)
	c.ConvergeSeconds = last.Sub(r.op.started).Seconds()
	c.FirstSeconds = r.tr.first(opPrefix).Sub(r.op.started).Seconds()
	return nil
}

// waitReady waits until every application is Ready, and measures the time
// from the operator's start.
func (r *operatorRun) waitReady(ctx context.Context) error {
	if err := r.e.poll(ctx, "every application Ready", func() (bool, string) {
		got, _ := r.tr.countReady(opPrefix)
		return got == r.n, fmt.Sprintf("%d of %d Ready", got, r.n)
	}); err != nil {
		return err
	}
	_, last := r.tr.countReady(opPrefix)
	r.c.ReadySeconds = last.Sub(r.op.started).Seconds()
	return nil
}

// coldCosts waits for the operator to settle after the cold converge and
// measures what the converge cost: the writes (from its client metrics and
// from the audit log), the passes per application, the time to its last
// write to a child, and the memory it holds.
func (r *operatorRun) coldCosts(ctx context.Context) error {
	c, n := r.c, r.n
	var err error
	if c.ColdClientWrites, err = r.e.quiet(ctx, r.op); err != nil {
		return err
	}
	if c.ColdWrites, err = r.e.audit.since(opPrefix); err != nil {
		return err
	}
	s, err := r.op.scrape()
	if err != nil {
		return err
	}
	c.ColdPassesPerApp = s.reconciles[r.w.controller] / float64(n)
	if !r.e.audit.lastChild.IsZero() {
		c.ChildrenSeconds = r.e.audit.lastChild.Sub(r.op.started).Seconds()
	}
	c.ColdWritesPerApp = float64(c.ColdWrites.without("events")) / float64(n)
	c.EventsPerApp = float64(c.ColdWrites.total()-c.ColdWrites.without("events")) / float64(n)
	if c.Memory, err = r.op.memory(); err != nil {
		return err
	}
	return nil
}

// createProbe creates the probe application name, and measures the
// round trip of a read under the operator's identity as it does. It returns
// when the probe was created.
func (r *operatorRun) createProbe(ctx context.Context, name string) (time.Time, float64, error) {
	created := time.Now()
	if err := r.e.admin.Create(ctx, r.w.newObject(probeNamespace, name, 0)); err != nil {
		return time.Time{}, 0, err
	}
	ms, err := r.e.roundTrip(ctx, r.w)
	if err != nil {
		return time.Time{}, 0, err
	}
	return created, ms, nil
}

// timeProbe waits for the probe application name, created at created, to be
// Ready, and reads the seconds until its status observed it and until it was
// Ready, and its steps from the audit log.
func (r *operatorRun) timeProbe(ctx context.Context, name string, created time.Time, seconds, readySeconds *float64, steps *probeTimeline) error {
	var err error
	if *seconds, *readySeconds, err = r.e.probeTimes(ctx, r.tr, name, created); err != nil {
		return err
	}
	*steps, err = r.e.audit.probe(name, created)
	return err
}

// idleProbe measures how soon the operator, idle, serves a new application:
// the same probe as in the backlog of the cold converge, and the ratio of
// the two.
func (r *operatorRun) idleProbe(ctx context.Context) error {
	c := r.c
	created, ms, err := r.createProbe(ctx, "probe-idle")
	if err != nil {
		return err
	}
	c.RoundTripIdleMs = ms
	if err := r.timeProbe(ctx, "probe-idle", created, &c.ProbeIdleSeconds, &c.ProbeIdleReadySeconds, &c.ProbeIdleSteps); err != nil {
		return err
	}
	c.ProbeRatio = c.ProbeBacklogSeconds / c.ProbeIdleSeconds
	c.ProbeReadyRatio = c.ProbeBacklogReadySeconds / c.ProbeIdleReadySeconds
	_, err = r.e.quiet(ctx, r.op)
	return err
}

// restart stops the operator and starts it again over the converged
// applications, and measures the time until it has made a pass over every
// one, what it wrote meanwhile and the memory it then holds.
func (r *operatorRun) restart(ctx context.Context) error {
	c := r.c
	fmt.Fprintln(r.cfg.Progress, "  restart")
	if err := r.op.stop(); err != nil {
		return err
	}
	r.e.audit.mark()
	var err error
	if r.op, err = r.e.startOperator(r.workers); err != nil {
		return err
	}
	// Every application, and the two probes.
	want := float64(r.n + 2)
	if err := r.e.poll(ctx, "a pass over every resource after the restart", func() (bool, string) {
		s, err := r.op.scrape()
		if err != nil {
			return false, err.Error()
		}
		return s.reconciles[r.w.controller] >= want, fmt.Sprintf("%v of %v passes", s.reconciles[r.w.controller], want)
	}); err != nil {
		return err
	}
	c.RestartSeconds = time.Since(r.op.started).Seconds()
	if c.RestartClientWrites, err = r.e.quiet(ctx, r.op); err != nil {
		return err
	}
	if c.RestartMemory, err = r.op.memory(); err != nil {
		return err
	}
	if c.RestartWrites, err = r.e.audit.since(""); err != nil {
		return err
	}
	return nil
}

// updateFanOut changes one spec field of every application at once, and
// measures the time until every one has converged on its new generation and
// the writes that cost.
func (r *operatorRun) updateFanOut(ctx context.Context) error {
	c, n := r.c, r.n
	fmt.Fprintln(r.cfg.Progress, "  update fan-out")
	before, err := r.op.scrape()
	if err != nil {
		return err
	}
	r.tr.reset(2)
	r.e.audit.mark()
	start := time.Now()
	if err := parallel(16, 0, n, func(i int) error {
		o := r.w.newObject(fmt.Sprintf("%s%03d", opPrefix, i/r.cfg.PerNamespace), fmt.Sprintf("app-%05d", i), i)
		return r.e.admin.Patch(ctx, o, client.RawPatch(types.MergePatchType, r.w.update))
	}); err != nil {
		return err
	}
	if err := r.e.poll(ctx, "update fan-out", func() (bool, string) {
		got, _ := r.tr.count(opPrefix)
		return got == n, fmt.Sprintf("%d of %d converged", got, n)
	}); err != nil {
		return err
	}
	_, last := r.tr.count(opPrefix)
	c.UpdateSeconds = last.Sub(start).Seconds()
	after, err := r.e.quiet(ctx, r.op)
	if err != nil {
		return err
	}
	c.UpdateClientWrites = after - before.writes
	if c.UpdateWrites, err = r.e.audit.since(opPrefix); err != nil {
		return err
	}
	c.UpdateWritesPerApp = float64(c.UpdateWrites.without("events")) / float64(n)
	return nil
}
