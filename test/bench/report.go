package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/app-operator/app-operator/test/cluster"
)

// Machine describes where a run took place.
type Machine struct {
	CPUs       int    `json:"cpus"`
	MemoryKiB  int64  `json:"memoryKiB"`
	GoVersion  string `json:"goVersion"`
	Kubernetes string `json:"kubernetes"`
	Kernel     string `json:"kernel"`
	// Load averages (1, 5, 15 min) before and after: the machine may be
	// shared, so compare ratios measured in the same run.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAverage()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		_, _ = fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(data), "\n", 2)[0], "MemTotal:"), "%d", &m.MemoryKiB)
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	// The control plane is built from source without version stamps: its
	// folder names the pinned versions (k8s-v1.37.1_kwok-v0.8.0).
	if dir, err := cluster.DefaultBinDir(); err == nil {
		m.Kubernetes = filepath.Base(dir)
	}
	return m
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// medianCPURatio is the median CPURatio of pairs.
func medianCPURatio(pairs []Pair) float64 {
	rs := make([]float64, 0, len(pairs))
	for _, p := range pairs {
		rs = append(rs, p.CPURatio)
	}
	if len(rs) == 0 {
		return 0
	}
	return median(rs)
}

// WriteTable prints the results as tables.
func WriteTable(w io.Writer, r *Results) {
	writeCases(w, r)
	writePairs(w, r)
	writeProbeSteps(w, r)
	writeMemoryAndReadCost(w, r)
	if m := r.Memory; m != nil {
		writeMemoryRamp(w, m)
	}
	if len(r.Config.OperatorEnv) > 0 {
		fmt.Fprintf(w, "operator environment: %s\n", strings.Join(r.Config.OperatorEnv, " "))
	}
	fmt.Fprintf(w, "machine: %d CPUs, %.1f GiB, %s, %s; load %s before, %s after\n", r.Machine.CPUs, float64(r.Machine.MemoryKiB)/(1<<20),
		r.Machine.GoVersion, r.Machine.Kubernetes, r.Machine.LoadBefore, r.Machine.LoadAfter)
}

// writeCases prints the table of the cases, a row each, and what its
// columns measure.
func writeCases(w io.Writer, r *Results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tN\tworkers\tbare s\tfirst s\tchildren s\tconverge s\tratio\tall Ready s\twrites/app\t(children+1)\tevents/app\tpasses/app\tCPU ratio\trestart writes\tupdate writes/app\tprobe backlog/idle s\tratio\tprobe Ready backlog/idle s\tratio\tround trip backlog/idle ms\tconverge peak RSS MiB\tconverge working set / peak usage MiB\theap MiB\tRSS MiB\tpeak RSS MiB\tworking set MiB\trestart peak RSS MiB\t")
	for _, c := range r.Cases {
		row := fmt.Sprintf("%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t%.2f\t%d\t%.2f\t%.1f\t%.2f\t", c.Workload, c.N, c.Workers, c.BareSeconds, c.FirstSeconds, c.ChildrenSeconds, c.ConvergeSeconds,
			c.ConvergeRatio, c.ReadySeconds, c.ColdWritesPerApp, c.Children+1, c.EventsPerApp, c.ColdPassesPerApp, medianCPURatio(c.Pairs))
		if c.Full {
			row += fmt.Sprintf("%d (client %.0f)\t%.2f\t%.2f/%.2f\t%.2f\t%.2f/%.2f\t%.2f\t%.1f/%.1f\t", c.RestartWrites.total(), c.RestartClientWrites,
				c.UpdateWritesPerApp, c.ProbeBacklogSeconds, c.ProbeIdleSeconds, c.ProbeRatio,
				c.ProbeBacklogReadySeconds, c.ProbeIdleReadySeconds, c.ProbeReadyRatio, c.RoundTripBacklogMs, c.RoundTripIdleMs)
		} else {
			row += "-\t-\t-\t-\t-\t-\t-\t"
		}
		converge := "-"
		if cg := c.ConvergeCgroup; cg != nil {
			converge = fmt.Sprintf("%.1f / %.1f", mib(cg.WorkingSet), mib(cg.PeakUsage))
		}
		row += fmt.Sprintf("%.1f\t%s\t%.1f\t%.1f\t%.1f\t%s\t", mib(c.ConvergePeakRSS), converge, mib(c.Memory.HeapInuse), mib(c.Memory.RSS), mib(c.Memory.PeakRSS), workingSet(c.Memory))
		if c.Full {
			row += fmt.Sprintf("%.1f\t", mib(c.RestartMemory.PeakRSS))
		} else {
			row += "-\t"
		}
		fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "first: from the operator's start until the first status observes its generation (start-up and one pass); children: until the operator's last child write; converge: until every status does (children applied); all Ready: until every rollout is reported too.")
	fmt.Fprintln(w, "writes: the API server's audit log, the operator's ServiceAccount, Events and reviews left out; client: its own request metrics (POST/PUT/PATCH/DELETE), which count the start-up SelfSubjectRulesReview.")
	fmt.Fprintln(w, "passes/app: the operator's finished passes until it settled after the cold converge. CPU ratio: CPU seconds of every process (the cluster's components and the operator) during the cold converge, over the same during the bare client's run; the median over the pairs.")
	fmt.Fprintln(w, "converge peak RSS: the largest RSS of the operator from its start until the cold converge ends (VmHWM). heap: the Go heap in use after a forced collection, and RSS, once the cold converge has settled; peak RSS: the largest RSS since the operator started (VmHWM), read then; restart peak RSS: the same for the operator restarted over the converged applications.")
	fmt.Fprintln(w, "working set: of the operator's memory cgroup, as the kubelet computes it (usage less inactive file pages), read with the RSS beside it; converge working set / peak usage: read with the converge peak RSS, the peak being the cgroup's largest usage (page cache included) since the operator started.")
	fmt.Fprintln(w, "round trip: the median of five reads under the operator's identity as each probe is created, the floor under any request of the probe's pass.")
	fmt.Fprintln(w, "bare probe: the same new application served by a client that applies its children as soon as it is created, waits for the Deployment controller's report and writes its status, during the bare client's backlog and then idle: the floor of the probe's ratio on this cluster.")
}

// writePairs prints, for every case, the cold converges and their bare
// clients: the ratios of the repeated pairs, and the CPU and the API
// requests of each pair.
func writePairs(w io.Writer, r *Results) {
	for _, c := range r.Cases {
		if len(c.Pairs) < 2 {
			continue
		}
		fmt.Fprintf(w, "ratio (%s, N=%d): median of %d cold converges, each against its bare client (run before it in every other pair):", c.Workload, c.N, len(c.Pairs))
		for _, p := range c.Pairs {
			order := "operator first"
			if p.BareStart.Before(p.OperatorStart) {
				order = "bare first"
			}
			fmt.Fprintf(w, " %.1f/%.1f s = %.2f (%s);", p.ConvergeSeconds, p.BareSeconds, p.Ratio, order)
		}
		fmt.Fprintln(w)
	}
	for _, c := range r.Cases {
		for i, p := range c.Pairs {
			fmt.Fprintf(w, "CPU s (%s, N=%d, workers %d, pair %d), operator's run/bare client's: total %.1f/%.1f = %.2f;", c.Workload, c.N, c.Workers, i+1,
				cpuTotal(p.ConvergeCPU), cpuTotal(p.BareCPU), p.CPURatio)
			names := slices.Sorted(maps.Keys(p.ConvergeCPU))
			for _, name := range names {
				if name != "operator" {
					fmt.Fprintf(w, " %s %.1f/%.1f,", name, p.ConvergeCPU[name], p.BareCPU[name])
				}
			}
			fmt.Fprintf(w, " operator %.1f / bare client %.1f\n", p.ConvergeCPU["operator"], p.BareCPU["client"])
		}
	}
	for _, c := range r.Cases {
		for i, p := range c.Pairs {
			fmt.Fprintf(w, "API requests (%s, N=%d, workers %d, pair %d), operator's run/bare client's, every client: total %.0f/%.0f; largest differences: %s\n", c.Workload, c.N, c.Workers, i+1,
				p.ConvergeRequests.total(), p.BareRequests.total(), requestDifferences(p.ConvergeRequests, p.BareRequests, 8))
		}
	}
}

// writeProbeSteps prints the steps of each full case's probes, the
// operator's and the bare client's.
func writeProbeSteps(w io.Writer, r *Results) {
	for _, c := range r.Cases {
		if !c.Full {
			continue
		}
		b, i := c.ProbeBacklogSteps, c.ProbeIdleSteps
		fmt.Fprintf(w, "probe steps (%s), backlog/idle s: first child written %.2f/%.2f, Deployment observed by its controller %.2f/%.2f, status %.2f/%.2f\n",
			c.Workload, b.ChildWrittenSeconds, i.ChildWrittenSeconds, b.DeploymentObservedSeconds, i.DeploymentObservedSeconds, c.ProbeBacklogSeconds, c.ProbeIdleSeconds)
		if p := c.BareProbe; p != nil {
			b, i := p.BacklogSteps, p.IdleSteps
			fmt.Fprintf(w, "bare probe (%s), backlog/idle s: first child written %.2f/%.2f, Deployment observed by its controller %.2f/%.2f, status %.2f/%.2f = %.2f; round trip %.1f/%.1f ms\n",
				c.Workload, b.ChildWrittenSeconds, i.ChildWrittenSeconds, b.DeploymentObservedSeconds, i.DeploymentObservedSeconds, p.BacklogSeconds, p.IdleSeconds, p.Ratio,
				p.RoundTripBacklogMs, p.RoundTripIdleMs)
		}
	}
}

// writeMemoryAndReadCost prints where each case's memory went, after the
// cold converge and after the restart, and what a read cost.
func writeMemoryAndReadCost(w io.Writer, r *Results) {
	for _, c := range r.Cases {
		fmt.Fprintf(w, "memory (%s, N=%d, workers %d) after the cold converge: %s\n", c.Workload, c.N, c.Workers, memoryBreakdown(c.Memory))
		if c.Full {
			fmt.Fprintf(w, "memory (%s, N=%d, workers %d) after the restart: %s\n", c.Workload, c.N, c.Workers, memoryBreakdown(c.RestartMemory))
		}
	}
	for _, c := range r.Cases {
		if rc := c.ReadCost; rc != nil {
			fmt.Fprintf(w, "read cost (%s run), CPU ms per read of a missing Deployment (%d, 4 at a time), API server + etcd: from storage %.2f + %.2f, from the watch cache %.2f + %.2f\n",
				c.Workload, rc.Reads, rc.StorageAPIServerMs, rc.StorageEtcdMs, rc.CacheAPIServerMs, rc.CacheEtcdMs)
		}
	}
}

// writeMemoryRamp prints the memory ramp's table, its slopes and where the
// memory went at its largest N.
func writeMemoryRamp(w io.Writer, m *MemoryRamp) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "memory (%s)\tN\toperator heap in use / live MiB\toperator RSS / peak MiB\toperator working set MiB\tinformer floor heap in use / live MiB\tfloor RSS / peak MiB\twatching floor heap in use / live MiB\twatching floor RSS / peak MiB\t\n", m.Workload)
	row := func(label string, n int, op, floor, watching memory) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f / %.1f\t%.1f / %.1f\t%s\t%.1f / %.1f\t%.1f / %.1f\t%.1f / %.1f\t%.1f / %.1f\t\n", label, n,
			mib(op.HeapInuse), mib(op.HeapAlloc), mib(op.RSS), mib(op.PeakRSS), workingSet(op),
			mib(floor.HeapInuse), mib(floor.HeapAlloc), mib(floor.RSS), mib(floor.PeakRSS),
			mib(watching.HeapInuse), mib(watching.HeapAlloc), mib(watching.RSS), mib(watching.PeakRSS))
	}
	for _, p := range m.Points {
		row("", p.N, p.Operator, p.Floor, p.WatchingFloor)
	}
	if m.Unrelated > 0 {
		row(fmt.Sprintf("+%d unrelated", m.Unrelated), m.Points[len(m.Points)-1].N, m.WithUnrelated, m.FloorWithUnrelated, m.WatchingFloorWithUnrelated)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "heap in use slope %.1f KiB/app (informer floor %.1f KiB/app, ratio %.2f; watching floor %.1f, ratio %.2f); live heap slope %.1f KiB/app (floor %.1f, ratio %.2f; watching floor %.1f, ratio %.2f); RSS slope %.1f KiB/app; unrelated objects add %.1f %% heap in use\n",
		m.SlopeKiB, m.FloorSlopeKiB, m.SlopeKiB/m.FloorSlopeKiB, m.WatchingFloorSlopeKiB, m.SlopeKiB/m.WatchingFloorSlopeKiB,
		m.LiveSlopeKiB, m.FloorLiveSlopeKiB, m.LiveSlopeKiB/m.FloorLiveSlopeKiB, m.WatchingFloorLiveSlopeKiB, m.LiveSlopeKiB/m.WatchingFloorLiveSlopeKiB,
		m.RSSSlopeKiB, m.UnrelatedIncrease)
	if len(m.Points) > 0 {
		last := m.Points[len(m.Points)-1]
		fmt.Fprintf(w, "operator memory at N=%d: %s\n", last.N, memoryBreakdown(last.Operator))
		fmt.Fprintf(w, "informer floor memory at N=%d: %s\n", last.N, memoryBreakdown(last.Floor))
	}
	fmt.Fprintln(w, "informer floor: informers only, started over the converged applications; watching floor: the same, running beside the operator from N=0. Peak: the largest RSS since the process started (VmHWM).")
}

// WriteFiles writes results.json, summary.md and bench.png into dir.
func WriteFiles(dir string, r *Results, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# app-operator benchmark, %s\n\n", r.Date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Command: `%s`\n", command)
	fmt.Fprintf(&b, "- Machine: %d CPUs, %.1f GiB memory, Linux %s; load average %s before, %s after (shared machine: compare ratios within one run)\n",
		r.Machine.CPUs, float64(r.Machine.MemoryKiB)/(1<<20), r.Machine.Kernel, r.Machine.LoadBefore, r.Machine.LoadAfter)
	fmt.Fprintf(&b, "- Versions: %s, %s\n", r.Machine.GoVersion, r.Machine.Kubernetes)
	fmt.Fprintf(&b, "- Applications: %d per namespace; operator workers per kind: %d\n\n```\n", r.Config.PerNamespace, r.Config.Workers)
	WriteTable(&b, r)
	b.WriteString("```\n\nPer-resource write counts are in results.json (coldWrites, restartWrites, updateWrites).\n")
	if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return writePlot(filepath.Join(dir, "bench.png"), r)
}

// writePlot draws converge time (operator and bare client) and memory
// (operator heap and RSS, informer floor heap) against N.
func writePlot(path string, r *Results) error {
	conv := plot.New()
	conv.Title.Text = "Converge time"
	conv.X.Label.Text = "applications (N)"
	conv.Y.Label.Text = "seconds"
	byWorkload := map[string][2]plotter.XYs{}
	for _, c := range r.Cases {
		if c.Workers != r.Config.Workers {
			continue
		}
		xy := byWorkload[c.Workload]
		xy[0] = append(xy[0], plotter.XY{X: float64(c.N), Y: c.ConvergeSeconds})
		xy[1] = append(xy[1], plotter.XY{X: float64(c.N), Y: c.BareSeconds})
		byWorkload[c.Workload] = xy
	}
	names := make([]string, 0, len(byWorkload))
	for k := range byWorkload {
		names = append(names, k)
	}
	sort.Strings(names)
	lines := make([]any, 0, 4*len(names))
	for _, k := range names {
		xy := byWorkload[k]
		sort.Slice(xy[0], func(i, j int) bool { return xy[0][i].X < xy[0][j].X })
		sort.Slice(xy[1], func(i, j int) bool { return xy[1][i].X < xy[1][j].X })
		lines = append(lines, k+" operator", xy[0], k+" bare client", xy[1])
	}
	if err := plotutil.AddLinePoints(conv, lines...); err != nil {
		return err
	}
	conv.Legend.Top, conv.Legend.Left = true, true

	mem := plot.New()
	mem.Title.Text = "Memory after GC"
	mem.X.Label.Text = "applications (N)"
	mem.Y.Label.Text = "MiB"
	if m := r.Memory; m != nil {
		var heap, live, rssXY, peakXY, floor, floorLive, watching plotter.XYs
		for _, p := range m.Points {
			heap = append(heap, plotter.XY{X: float64(p.N), Y: mib(p.Operator.HeapInuse)})
			live = append(live, plotter.XY{X: float64(p.N), Y: mib(p.Operator.HeapAlloc)})
			rssXY = append(rssXY, plotter.XY{X: float64(p.N), Y: mib(p.Operator.RSS)})
			peakXY = append(peakXY, plotter.XY{X: float64(p.N), Y: mib(p.Operator.PeakRSS)})
			floor = append(floor, plotter.XY{X: float64(p.N), Y: mib(p.Floor.HeapInuse)})
			floorLive = append(floorLive, plotter.XY{X: float64(p.N), Y: mib(p.Floor.HeapAlloc)})
			watching = append(watching, plotter.XY{X: float64(p.N), Y: mib(p.WatchingFloor.HeapInuse)})
		}
		if err := plotutil.AddLinePoints(mem, "operator heap in use", heap, "operator live heap", live, "operator RSS", rssXY, "operator peak RSS", peakXY,
			"informer floor heap in use", floor, "informer floor live heap", floorLive, "watching floor heap in use", watching); err != nil {
			return err
		}
		mem.Title.Text = fmt.Sprintf("Memory after GC (%s): %.1f KiB/app heap in use, %.1f live", m.Workload, m.SlopeKiB, m.LiveSlopeKiB)
	} else {
		var heap, rssXY, peakXY plotter.XYs
		for _, c := range r.Cases {
			if c.Workers == r.Config.Workers {
				heap = append(heap, plotter.XY{X: float64(c.N), Y: mib(c.Memory.HeapInuse)})
				rssXY = append(rssXY, plotter.XY{X: float64(c.N), Y: mib(c.Memory.RSS)})
				peakXY = append(peakXY, plotter.XY{X: float64(c.N), Y: mib(c.Memory.PeakRSS)})
			}
		}
		if err := plotutil.AddLinePoints(mem, "operator heap in use", heap, "operator RSS", rssXY, "operator peak RSS", peakXY); err != nil {
			return err
		}
	}
	mem.Legend.Top, mem.Legend.Left = true, true

	img := vgimg.New(12*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align([][]*plot.Plot{{conv, mem}}, tiles, dc)
	conv.Draw(canvases[0][0])
	mem.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// workingSet is the working set of m's cgroup in MiB, or "-".
func workingSet(m memory) string {
	if m.Cgroup == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", mib(m.Cgroup.WorkingSet))
}

// memoryBreakdown says in one line where a process's RSS goes, and its
// cgroup's memory when it runs in one.
func memoryBreakdown(m memory) string {
	s := fmt.Sprintf("RSS %.1f MiB (peak %.1f) = file-backed %.1f + anonymous %.1f; Go runtime: heap in use %.1f, heap free %.1f (released to the kernel %.1f), stacks %.1f, GC metadata %.1f, other runtime %.1f",
		mib(m.RSS), mib(m.PeakRSS), mib(m.RSSFile), mib(m.RSSAnon), mib(m.HeapInuse), mib(m.HeapFree), mib(m.HeapReleased), mib(m.Stacks), mib(m.GCMetadata), mib(m.RuntimeOther))
	if cg := m.Cgroup; cg != nil {
		s += fmt.Sprintf("; cgroup: working set %.1f MiB = usage %.1f (peak %.1f) - inactive file %.1f; anonymous %.1f, page cache %.1f (mapped %.1f, active %.1f)",
			mib(cg.WorkingSet), mib(cg.Usage), mib(cg.PeakUsage), mib(cg.InactiveFile), mib(cg.Anon), mib(cg.File), mib(cg.FileMapped), mib(cg.ActiveFile))
	}
	return s
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
