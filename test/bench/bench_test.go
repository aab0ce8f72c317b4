package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/app-operator/app-operator/test/cluster"
)

func TestMain(m *testing.M) {
	// The benchmark runs this test binary again as its bare client and its
	// informer floor.
	RunRole()
	os.Exit(m.Run())
}

// TestBenchSmoke runs every scenario of the benchmark with 50 AppServices
// on fresh full local clusters, so that the harness keeps working, and
// checks the write counts, which do not depend on the machine's speed. It
// asserts no timing: `make bench` measures those at real sizes.
func TestBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the full local cluster")
	}
	dir := t.TempDir()
	op, err := BuildOperator(dir)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env, err := cluster.ManagerEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GOGC=") }) {
		t.Errorf("the manager's environment in config/manager %v sets no GOGC", env)
	}
	const n = 50
	res, err := Run(context.Background(), Config{
		Operator: op, Self: self, OperatorEnv: env, N: []int{n}, Workloads: []string{"appservice"},
		Workers: 4, Repeat: 2, PerNamespace: 25, Memory: true, Unrelated: 200, Progress: testWriter{t}, ProfileDir: dir,
		// The operator's memory cgroup needs root.
		Cgroup: os.Geteuid() == 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 1 || res.Memory == nil || len(res.Memory.Points) < 3 {
		t.Fatalf("incomplete results: %+v", res)
	}
	c := res.Cases[0]
	var table strings.Builder
	WriteTable(&table, res)
	t.Logf("cold writes %v\nrestart writes %v\nupdate writes %v\n%s", c.ColdWrites, c.RestartWrites, c.UpdateWrites, table.String())

	if c.FirstSeconds <= 0 || c.FirstSeconds > c.ConvergeSeconds || c.ConvergeSeconds <= 0 || c.ReadySeconds <= 0 || c.BareSeconds <= 0 || c.ProbeIdleSeconds <= 0 || c.ProbeBacklogSeconds <= 0 ||
		c.ChildrenSeconds <= 0 || c.ChildrenSeconds > c.ConvergeSeconds || c.RoundTripBacklogMs <= 0 || c.RoundTripIdleMs <= 0 {
		t.Errorf("missing timings: %+v", c)
	}
	// Two pairs measured, the first being the case's own; the ratio is
	// their median.
	if len(c.Pairs) != 2 || c.Pairs[0].ConvergeSeconds != c.ConvergeSeconds || c.Pairs[0].BareSeconds != c.BareSeconds || c.Pairs[1].ConvergeSeconds <= 0 || c.Pairs[1].BareSeconds <= 0 {
		t.Errorf("pairs %+v: want two, the first with the case's converge %.3f s and bare %.3f s", c.Pairs, c.ConvergeSeconds, c.BareSeconds)
	} else if want := (c.Pairs[0].Ratio + c.Pairs[1].Ratio) / 2; math.Abs(c.ConvergeRatio-want) > 1e-9 {
		t.Errorf("ratio %.4f, want the median of the pairs' %.4f", c.ConvergeRatio, want)
	}
	// The order alternates: operator first, then bare client first.
	if len(c.Pairs) == 2 {
		if p := c.Pairs[0]; !p.OperatorStart.Before(p.BareStart) {
			t.Errorf("pair 1: operator started %s, bare client %s: want the operator first", p.OperatorStart, p.BareStart)
		}
		if p := c.Pairs[1]; !p.BareStart.Before(p.OperatorStart) || !c.Pairs[0].BareStart.Before(p.BareStart) {
			t.Errorf("pair 2: operator started %s, bare client %s: want the bare client first, after pair 1", p.OperatorStart, p.BareStart)
		}
	}
	// Each pair's CPU: the same components in both runs, the API server
	// busy in both, the operator and the bare client each counted.
	for i, p := range c.Pairs {
		if p.ConvergeCPU["kube-apiserver"] <= 0 || p.BareCPU["kube-apiserver"] <= 0 || p.ConvergeCPU["operator"] <= 0 || p.BareCPU["client"] <= 0 {
			t.Errorf("pair %d: CPU of the operator's run %v, of the bare client's %v: want the API server, the operator and the client each above 0", i+1, p.ConvergeCPU, p.BareCPU)
		}
		for name := range p.ConvergeCPU {
			if _, ok := p.BareCPU[name]; !ok && name != "operator" {
				t.Errorf("pair %d: %s measured in the operator's run only", i+1, name)
			}
		}
		if want := cpuTotal(p.ConvergeCPU) / cpuTotal(p.BareCPU); math.Abs(p.CPURatio-want) > 1e-9 {
			t.Errorf("pair %d: CPU ratio %.4f, want %.4f", i+1, p.CPURatio, want)
		}
		// The API server's own counts: both runs applied every Deployment.
		if op, bare := p.ConvergeRequests["APPLY deployments"], p.BareRequests["APPLY deployments"]; op < n || bare < n {
			t.Errorf("pair %d: the API server counted %v Deployment applies in the operator's run and %v in the bare client's, want at least %d each", i+1, op, bare, n)
		}
	}
	// A read from storage costs etcd; one from the watch cache does not.
	if rc := c.ReadCost; rc == nil || rc.StorageAPIServerMs <= 0 || rc.CacheAPIServerMs <= 0 || rc.StorageEtcdMs <= rc.CacheEtcdMs {
		t.Errorf("read cost %+v: want the API server's CPU above 0 for both, and etcd's above for reads from storage", rc)
	}
	// Every application takes at least one pass.
	if c.ColdPassesPerApp < 1 {
		t.Errorf("%.2f passes per application", c.ColdPassesPerApp)
	}
	type probe struct {
		steps   probeTimeline
		seconds float64
	}
	probes := []probe{{c.ProbeBacklogSteps, c.ProbeBacklogSeconds}, {c.ProbeIdleSteps, c.ProbeIdleSeconds}}
	// The bare client serves the same probes in its own run.
	if bp := c.BareProbe; bp == nil || bp.BacklogSeconds <= 0 || bp.IdleSeconds <= 0 || bp.RoundTripBacklogMs <= 0 || bp.RoundTripIdleMs <= 0 {
		t.Errorf("bare probe %+v: want both probes timed, and the round trips", bp)
	} else {
		if want := bp.BacklogSeconds / bp.IdleSeconds; math.Abs(bp.Ratio-want) > 1e-9 {
			t.Errorf("bare probe ratio %.4f, want %.4f", bp.Ratio, want)
		}
		probes = append(probes, probe{bp.BacklogSteps, bp.BacklogSeconds}, probe{bp.IdleSteps, bp.IdleSeconds})
	}
	for _, p := range probes {
		s := p.steps
		if s.ChildWrittenSeconds <= 0 || s.DeploymentObservedSeconds < s.ChildWrittenSeconds || s.DeploymentObservedSeconds > p.seconds {
			t.Errorf("probe steps %+v do not lead, in order, to its status at %.3f s", s, p.seconds)
		}
	}
	// The peak RSS is at least the RSS read with it, in the case and at
	// every step of the ramp, for the operator and both floors.
	for what, m := range map[string]memory{"after the cold converge": c.Memory, "after the restart": c.RestartMemory} {
		if m.HeapInuse <= 0 || m.RSS <= 0 || m.PeakRSS < m.RSS {
			t.Errorf("memory %s: %+v: want the heap, the RSS, and a peak RSS at least the RSS", what, m)
		}
		// The RSS splits into file-backed and anonymous pages; the runtime
		// reports its stacks and the collector's metadata.
		if m.RSSFile <= 0 || m.RSSAnon <= 0 || m.RSSFile+m.RSSAnon > m.RSS || m.Stacks <= 0 || m.GCMetadata <= 0 {
			t.Errorf("memory %s: %+v: want the RSS split into file-backed and anonymous pages, and the stacks and GC metadata", what, m)
		}
	}
	// In a cgroup of its own, the operator's working set is read wherever
	// its RSS is: above 0, at most the usage, which is at most its peak.
	if res.Config.Cgroup {
		cgroups := map[string]*cgroupMemory{"at the converge": c.ConvergeCgroup, "after the cold converge": c.Memory.Cgroup, "after the restart": c.RestartMemory.Cgroup}
		for _, p := range res.Memory.Points {
			cgroups[fmt.Sprintf("at N=%d of the ramp", p.N)] = p.Operator.Cgroup
		}
		for what, cg := range cgroups {
			if cg == nil || cg.WorkingSet <= 0 || cg.WorkingSet > cg.Usage || cg.PeakUsage < cg.Usage || cg.Anon <= 0 {
				t.Errorf("cgroup memory %s: %+v: want 0 < working set <= usage <= peak usage, and anonymous pages", what, cg)
			}
		}
		// The cgroup holds the process's pages: its anonymous RSS at least
		// (the cgroup's page cache may hold files the process never mapped).
		if cg := c.Memory.Cgroup; cg != nil && cg.Usage < c.Memory.RSSAnon {
			t.Errorf("cgroup usage %d bytes after the cold converge, below the operator's anonymous RSS %d", cg.Usage, c.Memory.RSSAnon)
		}
	} else {
		t.Log("not root: the operator ran in no cgroup of its own, its working set not measured")
	}
	// The peak up to the converge is read before the one after it: never
	// more.
	if c.ConvergePeakRSS <= 0 || c.ConvergePeakRSS > c.Memory.PeakRSS {
		t.Errorf("peak RSS up to the converge %d bytes, after it %d: want a positive peak, at most the later one", c.ConvergePeakRSS, c.Memory.PeakRSS)
	}
	// Both floors measured at every step; the watching floor, running
	// since N=0, holds more at the last step than at the first.
	pts := res.Memory.Points
	for _, p := range pts {
		if p.Floor.HeapInuse <= 0 || p.WatchingFloor.HeapInuse <= 0 || p.WatchingFloor.HeapAlloc <= 0 {
			t.Errorf("N=%d: missing floor memory: %+v", p.N, p)
		}
		for what, m := range map[string]memory{"operator": p.Operator, "floor": p.Floor, "watching floor": p.WatchingFloor} {
			if m.RSS <= 0 || m.PeakRSS < m.RSS {
				t.Errorf("N=%d: %s RSS %d bytes, peak %d: want a peak at least the RSS", p.N, what, m.RSS, m.PeakRSS)
			}
		}
	}
	if first, last := pts[0].WatchingFloor.HeapAlloc, pts[len(pts)-1].WatchingFloor.HeapAlloc; last <= first {
		t.Errorf("the watching floor's live heap went from %d bytes at N=%d to %d at N=%d: want it to grow with N", first, pts[0].N, last, pts[len(pts)-1].N)
	}
	// The bare client's writes: every child and one status per application.
	if want := int64(n * (c.Children + 1)); c.BareWrites != want {
		t.Errorf("the bare client made %d writes, want %d", c.BareWrites, want)
	}
	// Creating: each child applied once. The status is written when the
	// children are applied and again when the rollout is reported (size 0
	// rolls out at once): at most twice.
	if got, want := childWrites(c.ColdWrites), n*c.Children; got != want {
		t.Errorf("creating %d AppServices wrote children %d times, want %d: %v", n, got, want, c.ColdWrites)
	}
	if got := c.ColdWrites["patch appservices/status"]; got < n || got > 2*n {
		t.Errorf("creating %d AppServices wrote status %d times, want %d to %d: %v", n, got, n, 2*n, c.ColdWrites)
	}
	// A restart over converged resources writes nothing.
	if got := c.RestartWrites.total(); got != 0 {
		t.Errorf("a restart over %d converged AppServices made %d writes, want 0: %v", n, got, c.RestartWrites)
	}
	// An image change rewrites the Deployment only, once per application.
	if got := childWrites(c.UpdateWrites); got != n {
		t.Errorf("changing the image of %d AppServices wrote children %d times, want %d: %v", n, got, n, c.UpdateWrites)
	}
	if got := c.UpdateWrites["patch appservices/status"]; got < n || got > 2*n {
		t.Errorf("changing the image of %d AppServices wrote status %d times, want %d to %d: %v", n, got, n, 2*n, c.UpdateWrites)
	}
	if err := WriteFiles(dir, res, "go test ./test/bench -run TestBenchSmoke"); err != nil {
		t.Fatal(err)
	}
	// results.json carries the peak beside the RSS, and the cgroup's
	// working set when it was measured.
	data, err := os.ReadFile(dir + "/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Cases []struct {
			Memory struct {
				PeakRSS int64 `json:"peakRSSBytes"`
				Cgroup  *struct {
					WorkingSet int64 `json:"workingSetBytes"`
				} `json:"cgroup"`
			} `json:"memoryAfterConverge"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Cases) != 1 || saved.Cases[0].Memory.PeakRSS != c.Memory.PeakRSS {
		t.Errorf("results.json memoryAfterConverge %+v: want peakRSSBytes %d", saved.Cases, c.Memory.PeakRSS)
	} else if cg := saved.Cases[0].Memory.Cgroup; res.Config.Cgroup && (cg == nil || c.Memory.Cgroup == nil || cg.WorkingSet != c.Memory.Cgroup.WorkingSet) {
		t.Errorf("results.json memoryAfterConverge.cgroup %+v: want workingSetBytes of %+v", cg, c.Memory.Cgroup)
	}
	for _, f := range []string{"results.json", "summary.md", "bench.png", "heap-50.pprof", "heap-50-floor.pprof",
		"cpu-appservice-50.pprof", "apiserver-cpu-appservice-50.pprof", "apiserver-cpu-appservice-50-bare.pprof"} {
		if fi, err := os.Stat(dir + "/" + f); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// childWrites counts the writes in counts that are neither Events nor a
// status.
func childWrites(counts auditCounts) int {
	n := 0
	for k, v := range counts {
		if strings.HasSuffix(k, " events") || strings.HasSuffix(k, "/status") {
			continue
		}
		n += v
	}
	return n
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1.3}, 1.3},
		{[]float64{1.4, 1.1}, 1.25},
		{[]float64{1.3, 1.1, 1.2}, 1.2},
		{[]float64{2, 1.1, 1.2, 1.15}, 1.175},
	} {
		if got := median(slices.Clone(tc.xs)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
