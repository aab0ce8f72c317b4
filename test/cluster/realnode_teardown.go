package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The real node's teardown: stopping its processes and pods, and removing from
// the host what it added, after a clean stop or a killed run.

// stop stops the nodes and removes from the host everything they added:
// the pods (through the runtime, so that their networks are torn down),
// the processes, the iptables chains of kube-proxy and the kubelet, the
// bridges and the nodes' network namespaces, the mounts, the cgroups and
// the changed kernel settings. The run folder keeps the logs.
func (n *realNode) stop() error {
	var errs []error
	if n.stopStorage != nil {
		n.stopStorage()
		n.stopStorage = nil
	}
	stopNamed := func(name string) {
		for _, p := range n.allProcs() {
			if p.name == name {
				if err := p.stop(10 * time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	stopNamed("kubelet")
	// kube-proxy's cleanup takes seconds: it runs while the runtime
	// removes the pods.
	proxyDone := make(chan error, 1)
	go func() {
		stopNamed("kube-proxy")
		proxyDone <- kubeProxyCleanup(n.binDir)
	}()
	for _, a := range n.agents {
		if err := removeSandboxes(a.socket()); err != nil {
			errs = append(errs, err)
		}
	}
	proxyErr := <-proxyDone
	errs = append(errs, proxyErr)
	stopNamed("metrics-server")
	stopNamed("coredns")
	stopNamed("containerd")
	stopNamed("registry")
	if n.store != nil {
		errs = append(errs, n.store.stop())
		n.store = nil
	}
	n.procs = nil
	for _, a := range n.agents {
		a.procs = nil
	}
	if n.rec.Dir != "" {
		errs = append(errs, cleanupRealNode(n.rec, proxyErr == nil))
	}
	if n.lock != nil {
		_ = n.lock.Close()
		n.lock = nil
	}
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every pod sandbox through the CRI of
// the containerd at socket, which kills the containers and deletes their
// networks.
func removeSandboxes(socket string) error {
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		// containerd is not running: the sweep that follows kills what is left.
		return nil
	}
	errs := make([]error, len(list.Items))
	var wg sync.WaitGroup
	for i, sb := range list.Items {
		wg.Go(func() {
			if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				errs[i] = fmt.Errorf("stop pod sandbox %s: %w", sb.Id, err)
				return
			}
			if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				errs[i] = fmt.Errorf("remove pod sandbox %s: %w", sb.Id, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cleanupRealNode removes what the real nodes added to the host, whether
// they stopped cleanly or were killed. It touches only what they created:
// the processes in their own cgroup tree, the shims of their own
// containerds, mounts under their own folders, their iptables chains,
// their bridges and network namespaces.
func cleanupRealNode(rec realNodeRecordData, proxyCleaned bool) error {
	var errs []error
	killCgroupProcesses(realNodeCgroup)
	killShims()
	for _, dir := range []string{realNodeState, rec.Dir} {
		errs = append(errs, unmountUnder(dir))
	}
	if !proxyCleaned && kubeProxyCleanup(rec.BinDir) != nil {
		errs = append(errs, removeKubeProxyChains())
	}
	errs = append(errs, removeKubeletChains())
	errs = append(errs, deleteBridge(), deleteNodeNetwork())
	errs = append(errs, removeCgroupRoot())
	for key, value := range rec.Sysctls {
		path := filepath.Join("/proc/sys", key)
		if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) != value {
			if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", key, err))
			}
		}
	}
	// libcni's cache of this network's results, and the cache folder
	// itself if the node made it.
	cached, _ := filepath.Glob(filepath.Join(cniCacheDir, "results", cniNetworkName+"-*"))
	for _, f := range cached {
		_ = os.Remove(f)
	}
	if rec.CNICache {
		errs = append(errs, os.RemoveAll(cniCacheDir))
	}
	errs = append(errs, os.RemoveAll(realNodeState))
	// The object store's data and identities, of a run killed before it
	// removed them.
	errs = append(errs, os.RemoveAll(filepath.Join(rec.Dir, objectStoreDir)))
	return errors.Join(errs...)
}

// kubeProxyCleanup removes kube-proxy's rules and chains.
func kubeProxyCleanup(binDir string) error {
	if out, err := exec.Command(filepath.Join(binDir, "kube-proxy"), "--cleanup").CombinedOutput(); err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

// killShims kills the runc shims of the nodes' containerds (found by a
// containerd address under the nodes' state folder on their command line).
func killShims() {
	for _, pid := range shimPids(func(arg string) bool { return strings.HasPrefix(arg, realNodeState+"/") }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// shimPids are the runc shims with an argument that match accepts.
func shimPids(match func(arg string) bool) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != shimBinary || !slices.ContainsFunc(args, match) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// unmountUnder detaches every mount point at or under dir, deepest first.
// The kernel lists mount points by their real path: dir is compared as one
// too, so a run folder reached through a symbolic link (a bin/ linked from
// another checkout) loses its mounts as well.
func unmountUnder(dir string) error {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var errs []error
	for attempt := 0; attempt < 5; attempt++ {
		data, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return err
		}
		var points []string
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 5 {
				continue
			}
			p := unescapeMountPath(fields[4])
			if p == dir || strings.HasPrefix(p, dir+"/") {
				points = append(points, p)
			}
		}
		if len(points) == 0 {
			return nil
		}
		// Deepest first.
		for i := len(points) - 1; i >= 0; i-- {
			if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && attempt == 4 {
				errs = append(errs, fmt.Errorf("unmount %s: %w", points[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

func unescapeMountPath(p string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
