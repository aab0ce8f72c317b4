package bench

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The memory ramp: the operator's memory against the informer floors' as the
// number of applications grows.

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
	// The ramp saves the operator's heap profiles: the manager samples its
	// heap only when GODEBUG asks, here at Go's default rate, as the floors
	// do; the cases run it as it is deployed.
	opEnv := append([]string{"GODEBUG=memprofilerate=524288"}, cfg.OperatorEnv...)
	op, err := startOperator(cfg.Operator, e.kubeconfig, filepath.Join(e.cluster.Dir, "logs", "app-operator.log"), cfg.Workers, opEnv, cfg.Cgroup)
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
		profile := ""
		if step == n {
			profile = fmt.Sprintf("heap-%d", n)
		}
		p, err := e.measureMemory(ctx, op, wf, profile)
		if err != nil {
			return nil, err
		}
		p.N = step
		m.Points = append(m.Points, p)
		fmt.Fprintf(cfg.Progress, "  N=%d heap %.1f MiB, RSS %.1f MiB, peak RSS %.1f MiB; floor heap %.1f MiB, watching floor heap %.1f MiB\n", step,
			mib(p.Operator.HeapInuse), mib(p.Operator.RSS), mib(p.Operator.PeakRSS), mib(p.Floor.HeapInuse), mib(p.WatchingFloor.HeapInuse))
	}
	m.fitSlopes()

	if cfg.Unrelated > 0 {
		fmt.Fprintf(cfg.Progress, "  %d unrelated ConfigMaps and Secrets\n", cfg.Unrelated)
		if err := e.createUnrelated(ctx, cfg.Unrelated); err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Second)
		p, err := e.measureMemory(ctx, op, wf, "")
		if err != nil {
			return nil, err
		}
		m.WithUnrelated, m.FloorWithUnrelated, m.WatchingFloorWithUnrelated = p.Operator, p.Floor, p.WatchingFloor
		lastPoint := m.Points[len(m.Points)-1]
		m.UnrelatedIncrease = 100 * float64(p.Operator.HeapInuse-lastPoint.Operator.HeapInuse) / float64(lastPoint.Operator.HeapInuse)
	}
	return m, nil
}

// measureMemory reads the operator's memory and the informer floors', once
// the operator has settled: the watching floor's as it runs, the floor's
// from one run over the objects there are now. With a profile name, it also
// saves both heap profiles in cfg.ProfileDir (<name>.pprof and
// <name>-floor.pprof).
func (e *env) measureMemory(ctx context.Context, op, wf *operator, profile string) (MemoryPoint, error) {
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
	if profile != "" && e.cfg.ProfileDir != "" {
		if err := op.saveHeapProfile(filepath.Join(e.cfg.ProfileDir, profile+".pprof")); err != nil {
			return p, err
		}
		env = append(env, "BENCH_HEAP_PROFILE="+filepath.Join(e.cfg.ProfileDir, profile+"-floor.pprof"))
	}
	_, err = runRole(ctx, e.cfg.Self, env, filepath.Join(e.cluster.Dir, "logs", "floor.log"), &p.Floor)
	return p, err
}

// fitSlopes fits the slopes of the ramp's memories against N.
func (m *MemoryRamp) fitSlopes() {
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
}

// createUnrelated creates count objects no application owns, ConfigMaps
// and Secrets in turn with 512 bytes of data each, a thousand to a
// namespace of their own.
func (e *env) createUnrelated(ctx context.Context, count int) error {
	perNS := 1000
	for i := range (count + perNS - 1) / perNS {
		if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-unrelated-%02d", i)}}); err != nil {
			return err
		}
	}
	payload := string(make([]byte, 0))
	for range 512 {
		payload += "x"
	}
	return parallel(16, 0, count, func(i int) error {
		meta := metav1.ObjectMeta{Namespace: fmt.Sprintf("bench-unrelated-%02d", i/perNS), Name: fmt.Sprintf("unrelated-%05d", i)}
		if i%2 == 0 {
			return e.admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": payload}})
		}
		return e.admin.Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": payload}})
	})
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
