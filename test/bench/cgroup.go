package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The operator runs in a memory cgroup of its own, a child of the
// benchmark's, so that the benchmark reads its memory as the kubelet does:
// the cgroup's working set, its usage less the inactive file pages, which
// counts the page cache the operator's files (its executable, its log)
// keep charged to it, mapped or not.

// cgroupMemory is what a memory cgroup's files say.
type cgroupMemory struct {
	// Usage is memory.usage_in_bytes (v1) or memory.current (v2): every
	// page charged to the cgroup, anonymous and page cache.
	Usage int64 `json:"usageBytes"`
	// WorkingSet is Usage less the inactive file pages (total_inactive_file
	// of memory.stat on v1, inactive_file on v2), at least 0: the kubelet's
	// container_memory_working_set_bytes (cAdvisor's setMemoryStats), what
	// `kubectl top` shows and the kubelet evicts by.
	WorkingSet int64 `json:"workingSetBytes"`
	// PeakUsage is the largest Usage since the cgroup was made
	// (memory.max_usage_in_bytes on v1, memory.peak on v2; 0 where the
	// kernel has neither). The kernel keeps no peak of the working set.
	PeakUsage int64 `json:"peakUsageBytes"`
	// From memory.stat: anonymous pages, page cache (file), the page cache
	// some process maps, and the page cache on the active and inactive
	// lists.
	Anon         int64 `json:"anonBytes"`
	File         int64 `json:"fileBytes"`
	FileMapped   int64 `json:"fileMappedBytes"`
	ActiveFile   int64 `json:"activeFileBytes"`
	InactiveFile int64 `json:"inactiveFileBytes"`
}

// memoryCgroup is a memory cgroup the benchmark made.
type memoryCgroup struct {
	dir string
	v2  bool
}

var cgroupSeq atomic.Int64

// newMemoryCgroup makes a memory cgroup under the one this process is in,
// on cgroup v1 (the memory hierarchy) or v2 (when the memory controller is
// enabled for the children of this process's cgroup).
func newMemoryCgroup() (*memoryCgroup, error) {
	parent, v2, err := ownMemoryCgroup()
	if err != nil {
		return nil, err
	}
	g := &memoryCgroup{dir: filepath.Join(parent, fmt.Sprintf("app-operator-bench-%d-%d", os.Getpid(), cgroupSeq.Add(1))), v2: v2}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("making a memory cgroup (run as root, or with -cgroup=false): %w", err)
	}
	probe := "memory.usage_in_bytes"
	if v2 {
		probe = "memory.current"
	}
	if _, err := os.Stat(filepath.Join(g.dir, probe)); err != nil {
		_ = g.remove()
		if v2 {
			return nil, fmt.Errorf("cgroup v2: the memory controller is not enabled for the children of %s (its cgroup.subtree_control), and a cgroup that holds this process cannot enable it: run the benchmark in a cgroup whose subtree_control has memory, or with -cgroup=false", parent)
		}
		return nil, fmt.Errorf("memory cgroup %s has no %s: %w", g.dir, probe, err)
	}
	return g, nil
}

// ownMemoryCgroup finds the directory of this process's memory cgroup:
// on cgroup v1 where the memory hierarchy is mounted, else on v2.
func ownMemoryCgroup() (dir string, v2 bool, err error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	var v1Path, v2Path string
	haveV2 := false
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2Path, haveV2 = f[2], true
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "memory" {
				v1Path = f[2]
			}
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false, err
	}
	mountOf := func(fstype string, match func(superOpts string) bool) (root, point string, ok bool) {
		for _, line := range strings.Split(string(mounts), "\n") {
			// id parent major:minor root mount-point options ... - fstype source super-options
			pre, post, found := strings.Cut(line, " - ")
			if !found {
				continue
			}
			a, b := strings.Fields(pre), strings.Fields(post)
			if len(a) < 5 || len(b) < 3 || b[0] != fstype || !match(b[2]) {
				continue
			}
			return a[3], a[4], true
		}
		return "", "", false
	}
	under := func(root, point, path string) string {
		if root != "/" {
			path = strings.TrimPrefix(path, root)
		}
		return filepath.Join(point, path)
	}
	if v1Path != "" {
		root, point, ok := mountOf("cgroup", func(o string) bool {
			for _, opt := range strings.Split(o, ",") {
				if opt == "memory" {
					return true
				}
			}
			return false
		})
		if !ok {
			return "", false, errors.New("cgroup v1: no memory hierarchy mounted")
		}
		return under(root, point, v1Path), false, nil
	}
	if haveV2 {
		root, point, ok := mountOf("cgroup2", func(string) bool { return true })
		if !ok {
			return "", false, errors.New("cgroup v2: not mounted")
		}
		return under(root, point, v2Path), true, nil
	}
	return "", false, errors.New("no memory cgroup in /proc/self/cgroup")
}

// read reads the cgroup's memory.
func (g *memoryCgroup) read() (cgroupMemory, error) {
	usageFile, peakFile := "memory.usage_in_bytes", "memory.max_usage_in_bytes"
	if g.v2 {
		usageFile, peakFile = "memory.current", "memory.peak"
	}
	usage, err := readInt(filepath.Join(g.dir, usageFile))
	if err != nil {
		return cgroupMemory{}, err
	}
	peak, err := readInt(filepath.Join(g.dir, peakFile))
	if errors.Is(err, os.ErrNotExist) {
		peak, err = 0, nil // memory.peak came with Linux 5.19
	}
	if err != nil {
		return cgroupMemory{}, err
	}
	stat, err := os.ReadFile(filepath.Join(g.dir, "memory.stat"))
	if err != nil {
		return cgroupMemory{}, err
	}
	return cgroupMemoryFrom(g.v2, usage, peak, string(stat))
}

// cgroupMemoryFrom computes a cgroup's memory from its usage, its peak and
// its memory.stat, as cAdvisor does for the kubelet: the working set is
// the usage less the inactive file pages (the hierarchy's on v1,
// total_inactive_file), at least 0, and the usage itself when memory.stat
// does not say.
func cgroupMemoryFrom(v2 bool, usage, peak int64, stat string) (cgroupMemory, error) {
	m := cgroupMemory{Usage: usage, PeakUsage: peak}
	keys := map[string]*int64{"total_rss": &m.Anon, "total_cache": &m.File, "total_mapped_file": &m.FileMapped,
		"total_active_file": &m.ActiveFile, "total_inactive_file": &m.InactiveFile}
	if v2 {
		keys = map[string]*int64{"anon": &m.Anon, "file": &m.File, "file_mapped": &m.FileMapped,
			"active_file": &m.ActiveFile, "inactive_file": &m.InactiveFile}
	}
	inactiveKey := "total_inactive_file"
	if v2 {
		inactiveKey = "inactive_file"
	}
	haveInactive := false
	sc := bufio.NewScanner(strings.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || keys[f[0]] == nil {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("memory.stat %s: %w", f[0], err)
		}
		*keys[f[0]] = v
		haveInactive = haveInactive || f[0] == inactiveKey
	}
	m.WorkingSet = usage
	if haveInactive {
		m.WorkingSet = max(usage-m.InactiveFile, 0)
	}
	return m, nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// wrap returns the command line that runs argv inside the cgroup: a shell
// moves itself into the cgroup, then becomes the program (exec keeps its
// pid), so every page the program touches from its first instruction is
// charged to the cgroup.
func (g *memoryCgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "sh", g.dir}, argv...)
}

// remove removes the cgroup once its processes have exited. The pages
// still charged to it (page cache) stay cached.
func (g *memoryCgroup) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// dropPageCache drops what the page cache holds of the file at path, as
// far as no process maps it, so that the next program to read it (the
// operator, from its cgroup) has its pages charged to its own cgroup, as in
// a fresh container, rather than to whichever cgroup read them first. It
// returns how many bytes of the file are still cached.
func dropPageCache(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	fd := int(f.Fd())
	// Dirty pages (a binary just built) are not dropped until written.
	if err := syscall.Fdatasync(fd); err != nil {
		return 0, err
	}
	const fadvDontNeed = 4 // POSIX_FADV_DONTNEED
	if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, uintptr(fd), 0, 0, fadvDontNeed, 0, 0); e != 0 {
		return 0, fmt.Errorf("fadvise %s: %w", path, e)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	// mincore of a mapping of the file: which of its pages are cached.
	data, err := syscall.Mmap(fd, 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer func() { _ = syscall.Munmap(data) }()
	page := int64(os.Getpagesize())
	vec := make([]byte, (fi.Size()+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, fmt.Errorf("mincore %s: %w", path, e)
	}
	var cached int64
	for _, v := range vec {
		if v&1 != 0 {
			cached += page
		}
	}
	return cached, nil
}
