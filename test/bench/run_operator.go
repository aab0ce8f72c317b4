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
