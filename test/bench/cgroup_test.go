package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCgroupMemoryFrom checks the working set against the kubelet's
// (cAdvisor's) computation on samples of memory.stat.
func TestCgroupMemoryFrom(t *testing.T) {
	// Part of a cgroup v1 memory.stat: the cgroup's own counters, then the
	// hierarchy's (total_*), which cAdvisor reads.
	const v1 = `cache 9000
rss 1000
mapped_file 500
inactive_file 4000
active_file 5000
total_cache 30000
total_rss 10000
total_mapped_file 7000
total_inactive_file 12000
total_active_file 18000
`
	const v2 = `anon 10000
file 30000
kernel 2000
file_mapped 7000
active_file 18000
inactive_file 12000
`
	for _, tc := range []struct {
		name        string
		v2          bool
		usage, peak int64
		stat        string
		want        cgroupMemory
	}{
		{"v1: usage less the hierarchy's inactive file pages", false, 42000, 50000, v1,
			cgroupMemory{Usage: 42000, WorkingSet: 30000, PeakUsage: 50000, Anon: 10000, File: 30000, FileMapped: 7000, ActiveFile: 18000, InactiveFile: 12000}},
		{"v2: memory.current less inactive_file", true, 42000, 0, v2,
			cgroupMemory{Usage: 42000, WorkingSet: 30000, Anon: 10000, File: 30000, FileMapped: 7000, ActiveFile: 18000, InactiveFile: 12000}},
		{"v1: more inactive file pages than usage floors at 0", false, 11000, 11000, "total_inactive_file 12000\n",
			cgroupMemory{Usage: 11000, PeakUsage: 11000, InactiveFile: 12000}},
		{"v2: more inactive file pages than usage floors at 0", true, 11000, 0, "inactive_file 12000\n",
			cgroupMemory{Usage: 11000, InactiveFile: 12000}},
		{"v1: the cgroup's own inactive_file is not the hierarchy's", false, 42000, 0, "inactive_file 4000\n",
			cgroupMemory{Usage: 42000, WorkingSet: 42000}},
		{"no inactive file pages: the working set is the usage", true, 42000, 0, "anon 42000\n",
			cgroupMemory{Usage: 42000, WorkingSet: 42000, Anon: 42000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cgroupMemoryFrom(tc.v2, tc.usage, tc.peak, tc.stat)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := cgroupMemoryFrom(false, 1, 1, "total_inactive_file x\n"); err == nil {
		t.Error("no error for a value that is not a number")
	}
}

// TestMemoryCgroup runs a program in a memory cgroup of its own, reads
// the cgroup's memory and removes it.
func TestMemoryCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup needs root")
	}
	g, err := newMemoryCgroup()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.remove() }()
	argv := g.wrap([]string{"/bin/sh", "-c", "cat /proc/self/cgroup; head -c 4000000 /dev/zero > /dev/null"})
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "/"+filepath.Base(g.dir)+"\n") {
		t.Errorf("the program ran in %s, want %s", out, g.dir)
	}
	m, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	// The program has exited: what it charged may be gone, not the peak.
	if m.WorkingSet < 0 || m.WorkingSet > m.Usage || (m.PeakUsage != 0 && m.PeakUsage < m.Usage) {
		t.Errorf("cgroup memory %+v: want 0 <= working set <= usage <= peak", m)
	}
	if m.PeakUsage == 0 && !g.v2 {
		t.Errorf("cgroup memory %+v: want the peak of the usage (memory.max_usage_in_bytes)", m)
	}
	if err := g.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.dir); !os.IsNotExist(err) {
		t.Errorf("%s not removed: %v", g.dir, err)
	}
}
