package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/app-operator/app-operator/test/cluster"
)

// operator is the app-operator binary running as a separate process, as
// its ServiceAccount, with its metrics and profiler on loopback ports. The
// watching floor runs as one too (without metrics).
type operator struct {
	cmd     *exec.Cmd
	name    string // the program's name, for errors
	started time.Time
	// cgroup is the operator's memory cgroup, when it runs in one.
	cgroup  *memoryCgroup
	metrics string // base URL of the metrics endpoint
	pprof   string // base URL of the profiler
	done    chan error

	stopOnce sync.Once
	stopErr  error
}

// startOperator runs binary with the kubeconfig of the operator's
// ServiceAccount, the given number of workers per kind, and env added to
// the environment; with inCgroup, in a memory cgroup of its own, made for
// it (see memoryCgroup.wrap) and removed once it stops, with the binary's
// pages dropped from the page cache first.
func startOperator(binary, kubeconfig, logFile string, workers int, env []string, inCgroup bool) (*operator, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	o := &operator{
		name:    filepath.Base(binary),
		metrics: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		pprof:   fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
	}
	argv := []string{binary,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", ports[2]),
		fmt.Sprintf("--max-concurrent-reconciles=%d", workers),
	}
	if inCgroup {
		cached, err := dropPageCache(binary)
		if err != nil {
			return nil, err
		}
		if cached > 0 {
			fmt.Fprintf(os.Stderr, "bench: %.1f MiB of %s still in the page cache (mapped by another process?): charged elsewhere than to the operator's cgroup\n", mib(cached), binary)
		}
		if o.cgroup, err = newMemoryCgroup(); err != nil {
			return nil, err
		}
		argv = o.cgroup.wrap(argv)
	}
	o.cmd = exec.Command(argv[0], argv[1:]...)
	o.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), env...)
	// The metrics endpoint answers once the manager runs.
	return o, o.start(logFile, func() error {
		_, err := o.scrape()
		return err
	})
}

// startWatchingFloor runs this executable (self) as the watching floor,
// with the kubeconfig of the operator's ServiceAccount, and returns once
// its informers have synced.
func startWatchingFloor(self, kubeconfig, logFile string) (*operator, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	o := &operator{name: filepath.Base(self), pprof: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	o.cmd = exec.Command(self)
	o.cmd.Env = append(os.Environ(), RoleEnv+"=watching-floor", "BENCH_KUBECONFIG="+kubeconfig,
		fmt.Sprintf("BENCH_PPROF_ADDR=127.0.0.1:%d", ports[0]))
	// The profiler answers once the informers have synced.
	return o, o.start(logFile, func() error {
		resp, err := http.Get(o.pprof + "/debug/pprof/")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("profiler: %s", resp.Status)
		}
		return nil
	})
}

// start starts o.cmd with its output in logFile and waits up to two
// minutes for ready to succeed; on failure the process is stopped.
func (o *operator) start(logFile string, ready func() error) error {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	o.done = make(chan error, 1)
	o.cmd.Stdout, o.cmd.Stderr = log, log
	// The kernel stops the process if the benchmark dies first.
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o.started = time.Now()
	if err := o.cmd.Start(); err != nil {
		_ = log.Close()
		if o.cgroup != nil {
			_ = o.cgroup.remove()
		}
		return err
	}
	go func() { o.done <- o.cmd.Wait(); _ = log.Close() }()
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-o.done:
			o.done <- err // for stop
			return false, fmt.Errorf("%s exited: %v (log in %s)", o.name, err, logFile)
		default:
		}
		return ready() == nil, nil
	})
	if err != nil {
		_ = o.stop()
	}
	return err
}

// stop sends SIGTERM and waits for the operator to exit. Calling it again
// returns the first call's result.
func (o *operator) stop() error {
	o.stopOnce.Do(func() {
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(30 * time.Second):
			_ = o.cmd.Process.Kill()
			<-o.done
			o.stopErr = fmt.Errorf("%s did not stop within 30s of SIGTERM", o.name)
		}
		if o.cgroup != nil {
			if err := o.cgroup.remove(); err != nil && o.stopErr == nil {
				o.stopErr = fmt.Errorf("removing the operator's memory cgroup: %w", err)
			}
		}
	})
	return o.stopErr
}

// metricsSample is the part of the operator's metrics the benchmark reads.
type metricsSample struct {
	// writes counts the mutating requests of the operator's clients
	// (rest_client_requests_total with method POST, PUT, PATCH or DELETE).
	writes float64
	// reconciles counts finished passes by controller.
	reconciles map[string]float64
}

var metricLine = regexp.MustCompile(`^([a-z_]+)\{([^}]*)\} ([0-9.e+-]+)$`)

func (o *operator) scrape() (metricsSample, error) {
	s := metricsSample{reconciles: map[string]float64{}}
	resp, err := http.Get(o.metrics + "/metrics")
	if err != nil {
		return s, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		switch m[1] {
		case "rest_client_requests_total":
			for _, verb := range []string{`method="POST"`, `method="PUT"`, `method="PATCH"`, `method="DELETE"`} {
				if strings.Contains(m[2], verb) {
					s.writes += v
				}
			}
		case "controller_runtime_reconcile_total":
			if c := regexp.MustCompile(`controller="([^"]+)"`).FindStringSubmatch(m[2]); c != nil {
				s.reconciles[c[1]] += v
			}
		}
	}
	return s, sc.Err()
}

// memory is a process's memory: the Go heap in use after a forced
// collection, the resident set size, and the largest resident set size
// since the process started (VmHWM), which the start-up and the first
// passes set while the heap after a collection no longer shows them. The
// other fields say where the RSS goes beyond the heap in use: the Go
// runtime's own accounts (runtime.MemStats) and, from the kernel, the
// resident pages of mapped files (the executable's code and data) and the
// anonymous ones (everything the runtime allocated). Cgroup is the memory
// of the operator's cgroup, when it runs in one: what the kubelet sees.
type memory struct {
	HeapInuse int64 `json:"heapInuseBytes"`
	HeapAlloc int64 `json:"heapAllocBytes"`
	RSS       int64 `json:"rssBytes"`
	PeakRSS   int64 `json:"peakRSSBytes"`
	// HeapFree is free heap the runtime keeps (HeapIdle - HeapReleased);
	// HeapReleased was returned to the kernel and is not resident.
	HeapFree     int64 `json:"heapFreeBytes"`
	HeapReleased int64 `json:"heapReleasedBytes"`
	// Stacks are the goroutine stacks (StackInuse).
	Stacks int64 `json:"stacksBytes"`
	// GCMetadata is the collector's own metadata (GCSys); RuntimeOther is
	// the rest of the runtime's structures (MSpanInuse, MCacheInuse,
	// BuckHashSys, OtherSys).
	GCMetadata   int64 `json:"gcMetadataBytes"`
	RuntimeOther int64 `json:"runtimeOtherBytes"`
	// RSSFile and RSSAnon split the RSS (RssFile, RssAnon of
	// /proc/<pid>/status).
	RSSFile int64 `json:"rssFileBytes"`
	RSSAnon int64 `json:"rssAnonBytes"`
	// Cgroup is nil for a process run outside a cgroup of its own.
	Cgroup *cgroupMemory `json:"cgroup,omitempty"`
}

// memoryFrom fills the runtime's part of a memory from its statistics.
func memoryFrom(ms *runtime.MemStats) memory {
	return memory{
		HeapInuse: int64(ms.HeapInuse), HeapAlloc: int64(ms.HeapAlloc),
		HeapFree: int64(ms.HeapIdle - ms.HeapReleased), HeapReleased: int64(ms.HeapReleased),
		Stacks: int64(ms.StackInuse), GCMetadata: int64(ms.GCSys),
		RuntimeOther: int64(ms.MSpanInuse + ms.MCacheInuse + ms.BuckHashSys + ms.OtherSys),
	}
}

// memStatLine is a line of the runtime's statistics at the end of a heap
// profile in text form: "# Name = value" or "# Name = inuse / sys".
var memStatLine = regexp.MustCompile(`(?m)^# (\w+) = (\d+)(?: / \d+)?$`)

// memory forces a collection in the operator (the profiler's gc=1) and
// reads the runtime's statistics that come with the heap profile.
func (o *operator) memory() (memory, error) {
	resp, err := http.Get(o.pprof + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return memory{}, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return memory{}, err
	}
	var ms runtime.MemStats
	fields := map[string]*uint64{
		"HeapAlloc": &ms.HeapAlloc, "HeapInuse": &ms.HeapInuse, "HeapIdle": &ms.HeapIdle, "HeapReleased": &ms.HeapReleased,
		"Stack": &ms.StackInuse, "MSpan": &ms.MSpanInuse, "MCache": &ms.MCacheInuse,
		"BuckHashSys": &ms.BuckHashSys, "GCSys": &ms.GCSys, "OtherSys": &ms.OtherSys,
	}
	for _, g := range memStatLine.FindAllStringSubmatch(string(body), -1) {
		if f, ok := fields[g[1]]; ok {
			*f, _ = strconv.ParseUint(g[2], 10, 64)
		}
	}
	if ms.HeapInuse == 0 || ms.StackInuse == 0 {
		return memory{}, fmt.Errorf("no HeapInuse or Stack in the heap profile")
	}
	m := memoryFrom(&ms)
	if err := readRSS(o.cmd.Process.Pid, &m); err != nil {
		return m, err
	}
	return m, o.readCgroup(&m)
}

// readCgroup reads the memory of the operator's cgroup into m, when it
// runs in one.
func (o *operator) readCgroup(m *memory) error {
	if o.cgroup == nil {
		return nil
	}
	cg, err := o.cgroup.read()
	if err != nil {
		return err
	}
	m.Cgroup = &cg
	return nil
}

// saveHeapProfile writes the operator's heap profile, after a collection,
// to path (read it with go tool pprof).
func (o *operator) saveHeapProfile(path string) error {
	return o.saveProfile("heap?gc=1", path)
}

func (o *operator) saveProfile(query, path string) error {
	resp, err := http.Get(o.pprof + "/debug/pprof/" + query)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", query, resp.Status)
	}
	return writeFile(path, func(w io.Writer) error {
		_, err := io.Copy(w, resp.Body)
		return err
	})
}

// writeFile writes to a new file at path what write writes.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// readRSS reads the resident set size of a process (VmRSS), its peak
// (VmHWM) and its file-backed and anonymous parts (RssFile, RssAnon) from
// /proc into m.
func readRSS(pid int, m *memory) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	fields := map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.PeakRSS, "RssFile:": &m.RSSFile, "RssAnon:": &m.RSSAnon}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || fields[f[0]] == nil {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("/proc/%d/status: %w", pid, err)
		}
		*fields[f[0]] = kb * 1024
	}
	if m.RSS == 0 || m.PeakRSS == 0 {
		return fmt.Errorf("no VmRSS or VmHWM for process %d", pid)
	}
	return nil
}

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTicks = 100

// cpuSeconds reads the CPU time, user and system, process pid has used.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields after
	// it start at the state (field 3); utime and stime are fields 14 and 15.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var ticks int64
	for _, v := range f[11:13] {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += t
	}
	return float64(ticks) / clockTicks, nil
}

// cpuMeter measures the CPU time named processes use from its start.
type cpuMeter struct {
	pids  map[string]int
	start map[string]float64
}

func startCPU(pids map[string]int) (*cpuMeter, error) {
	m := &cpuMeter{pids: pids, start: map[string]float64{}}
	for name, pid := range pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			return nil, err
		}
		m.start[name] = s
	}
	return m, nil
}

// read returns the CPU seconds each process used since the meter started.
func (m *cpuMeter) read() (map[string]float64, error) {
	out := make(map[string]float64, len(m.pids))
	for name, pid := range m.pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			return nil, err
		}
		out[name] = s - m.start[name]
	}
	return out, nil
}

// runRole runs this executable again in one of the benchmark's roles (the
// bare client, the informer floor) and decodes the JSON it prints. It
// returns the CPU seconds the role used.
func runRole(ctx context.Context, self string, env []string, logFile string, out any) (float64, error) {
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = log.Close() }()
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s: %w (log in %s)", strings.Join(env, " "), err, logFile)
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return cpu, json.Unmarshal(stdout, out)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// BuildOperator builds the operator binary from the repository into dir
// (go build, as `make build` does) and returns its path. The benchmark
// builds its own copy: bin/ may be shared by several working trees.
func BuildOperator(dir string) (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "app-operator")
	cmd := exec.Command("go", "build", "-tags", cluster.ManagerBuildTags, "-o", out, "./cmd/app-operator")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/app-operator: %w\n%s", err, msg)
	}
	return out, nil
}
