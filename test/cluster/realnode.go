package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The RealPods profile's node: its files, its types and whether this machine
// can run it (realnode_start.go starts it, realnode_teardown.go removes it,
// and each other realnode_*.go file holds one of its components or one part
// of the host it changes).

// The real nodes: one set per machine at a time (kube-proxy's iptables
// chains and the kubelet's are the host's, and so are the nodes' bridge
// and namespaces), guarded by a lock file. Their volatile state (sockets,
// the runtime's state, the pods' network namespaces) lives under a short
// path, since socket paths are limited to 107 bytes; everything else lives
// in the cluster's run folder, under realnode/ (realnode/nodes/<name>/ for
// each of several nodes).
const (
	// RealNodeName is the name of the RealPods profile's node.
	RealNodeName = "realnode-0"
	// RealNodeBinDirEnv overrides the folder the real node's binaries and
	// images are read from.
	RealNodeBinDirEnv = "APP_OPERATOR_REALNODE"

	realNodeLock   = "/run/app-operator-realnode.lock"
	realNodeState  = "/run/app-operator-realnode"
	realNodeRecord = realNodeState + "/cluster.json"
	realNodeCgroup = "app-operator-realnode"
	bridgeName     = "appop-cni0"
	podSubnet      = "10.88.0.0/24"
	bridgeIP       = "10.88.0.1"
	cniNetworkName = "app-operator"
	cniPluginDir   = "/usr/lib/cni"
	cniCacheDir    = "/var/lib/cni"
	shimBinary     = "containerd-shim-runc-v2"
)

// The kernel settings the kubelet, kube-proxy and the CNI bridge plugin may
// change: saved before the node starts and put back when it stops.
var realNodeSysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
	"net/ipv6/conf/all/forwarding",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// realNodeRecordData is written before anything is changed on the host, so
// that a later start can undo what a killed run left behind.
type realNodeRecordData struct {
	Dir     string            `json:"dir"`
	BinDir  string            `json:"binDir"`
	Sysctls map[string]string `json:"sysctls"`
	// CNICache is true when the node created libcni's cache folder.
	CNICache bool `json:"cniCache"`
}

// realNode is the RealPods profile's node: registry, containerd, kubelet and
// kube-proxy.
type realNode struct {
	binDir string
	dir    string
	lock   *os.File
	rec    realNodeRecordData
	// registry is the address of the node's image registry.
	registry string
	// hostIP is where the nodes and their pods reach the host: the
	// pods' bridge of the one node, or the nodes' bridge.
	hostIP string
	agents []*agent
	// ports and caCert are what a node restarted after StopNode starts
	// with again.
	ports  realNodePorts
	caCert string
	// maxPods is the kubelets' maxPods; their default when 0.
	maxPods int
	// procs run on the host; each agent's run on its node.
	procs []*process
	// stopStorage stops the volume provisioner (storage.go).
	stopStorage func()
	// store is the S3 object store (objectstore.go); nil without one.
	store *objectStore
}

// DefaultRealNodeBinDir is the folder `make realnode` builds into:
// bin/realnode/k8s-<v>_containerd-<v>_runc-<v>_registry-<v>_metrics-server-<v>_coredns-<v>, with the
// versions read from the go.mod files that pin them.
func DefaultRealNodeBinDir() (string, error) {
	return pinnedBinDir(RealNodeBinDirEnv, "realnode",
		pin{"k8s", "hack/controlplane/go.mod", "k8s.io/kubernetes"},
		pin{"containerd", "hack/realnode/go.mod", "github.com/containerd/containerd/v2"},
		pin{"runc", "hack/realnode/go.mod", "github.com/opencontainers/runc"},
		pin{"registry", "hack/realnode/go.mod", "github.com/distribution/distribution/v3"},
		pin{"metrics-server", "hack/controlplane/go.mod", "sigs.k8s.io/metrics-server"},
		pin{"coredns", "hack/controlplane/go.mod", "github.com/coredns/coredns"})
}

// realNodeBinaries are the files `make realnode` leaves in its folder.
var realNodeBinaries = []string{"kubelet", "kube-proxy", "containerd", shimBinary, "runc", "registry", "metrics-server", "coredns", "images/index.json"}

// RealPodsSkipEnv, set to 0, makes the tests that need the RealPods
// profile skip even where it can run.
const RealPodsSkipEnv = "APP_OPERATOR_REALPODS"

// RealPodsSkipReason is why the tests that need the RealPods profile skip
// here ("" when they run): RealPodsSkipEnv set to 0, or what
// RealPodsSupported says.
func RealPodsSkipReason() string {
	if os.Getenv(RealPodsSkipEnv) == "0" {
		return RealPodsSkipEnv + "=0"
	}
	if err := RealPodsSupported(); err != nil {
		return err.Error()
	}
	return ""
}

// RealPodsSupported tells whether this machine can run the RealPods
// profile: nil if it can, else the reason it cannot.
func RealPodsSupported() error {
	if os.Geteuid() != 0 {
		return errors.New("the real-node profile needs root (it runs a kubelet, containerd and kube-proxy)")
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
			if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err2 != nil {
				return fmt.Errorf("no cgroup %s hierarchy under /sys/fs/cgroup: %w", c, err)
			}
		}
	}
	for _, bin := range []string{"iptables", "ip6tables", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is missing (`make realnode` installs iptables as root): %w", bin, err)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniPluginDir, p)); err != nil {
			return fmt.Errorf("CNI plugin %s missing in %s (`make realnode` installs containernetworking-plugins as root)", p, cniPluginDir)
		}
	}
	dir, err := DefaultRealNodeBinDir()
	if err != nil {
		return err
	}
	return checkRealNodeBinaries(dir)
}

func checkRealNodeBinaries(dir string) error {
	for _, n := range realNodeBinaries {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("real-node file %s missing in %s: run `make realnode` first", n, dir)
		}
	}
	return nil
}

// realNodePorts are the loopback ports of the node's components.
type realNodePorts struct {
	registry, kubelet, kubeletHealthz, proxyHealthz, proxyMetrics, metricsServer, dnsReady int
}

// realNodeTokens are the node components' API credentials.
type realNodeTokens struct {
	// kubelets has one token per node.
	kubelets                  []string
	proxy, metricsServer, dns string
}

// run starts the node binary name on the host, logging to the node's
// folder.
func (n *realNode) run(name string, args ...string) error {
	p, err := startProcess(filepath.Join(n.binDir, name), args, filepath.Join(n.dir, "logs", name+".log"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	n.procs = append(n.procs, p)
	return nil
}

// answersOK is nil when a GET of url answers 200 OK: a component's
// health or readiness endpoint.
func answersOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// runOn starts the node binary name on agent a's network, logging to its
// folder.
func (n *realNode) runOn(a *agent, name string, env []string, args ...string) error {
	bin, args := a.command(filepath.Join(n.binDir, name), args...)
	p, err := startProcessEnv(bin, args, filepath.Join(a.dir, "logs", name+".log"), env)
	if err != nil {
		return fmt.Errorf("start %s on %s: %w", name, a.name, err)
	}
	p.name = name
	a.procs = append(a.procs, p)
	return nil
}

// allProcs are the host's processes and every node's.
func (n *realNode) allProcs() []*process {
	procs := slices.Clone(n.procs)
	for _, a := range n.agents {
		procs = append(procs, a.procs...)
	}
	return procs
}

func (n *realNode) exited() error {
	for _, p := range n.allProcs() {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v; last log lines:\n%s", p.name, p.err, p.tail(20))
		default:
		}
	}
	return nil
}

func (n *realNode) poll(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		if err := n.exited(); err != nil {
			return false, err
		}
		last = check()
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w (last: %v)", what, err, last)
	}
	return nil
}
