package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	imagename "github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// The real node: one per machine at a time (kube-proxy's iptables chains and
// the kubelet's are the host's), guarded by a lock file. Its volatile state
// (sockets, the runtime's state, the pods' network namespaces) lives under a
// short path, since socket paths are limited to 107 bytes; everything else
// lives in the cluster's run folder, under realnode/.
const (
	// RealNodeName is the name of the RealPods profile's node.
	RealNodeName = "realnode-0"
	// RealNodeBinDirEnv overrides the folder the real node's binaries and
	// images are read from.
	RealNodeBinDirEnv = "APP_OPERATOR_REALNODE"

	realNodeLock   = "/run/app-operator-realnode.lock"
	realNodeState  = "/run/app-operator-realnode"
	realNodeRecord = realNodeState + "/cluster.json"
	realNodeSocket = realNodeState + "/containerd.sock"
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
	procs    []*process
	// stopStorage stops the volume provisioner (storage.go).
	stopStorage func()
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
		pin{"metrics-server", "hack/realnode/metrics-server/go.mod", "sigs.k8s.io/metrics-server"},
		pin{"coredns", "hack/realnode/coredns/go.mod", "github.com/coredns/coredns"})
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
	kubelet, proxy, metricsServer, dns string
}

// startRealNode starts the node on top of the running control plane and
// returns once the node is Ready. On failure the caller's Stop undoes what
// was done: c.node is set as soon as the machine-wide lock is held.
func (c *Cluster) startRealNode(ctx context.Context, binDir string, ports realNodePorts, tokens realNodeTokens, keys *pki, progress io.Writer) error {
	lock, err := lockRealNode(ctx, progress)
	if err != nil {
		return err
	}
	n := &realNode{binDir: binDir, dir: filepath.Join(c.Dir, "realnode"), lock: lock}
	c.node = n

	// A run killed before its teardown leaves its record behind.
	if data, err := os.ReadFile(realNodeRecord); err == nil {
		var old realNodeRecordData
		if json.Unmarshal(data, &old) == nil {
			fmt.Fprintln(progress, "Removing what a previous real-node run left behind in", old.Dir)
			_ = cleanupRealNode(old, false)
		}
	}
	n.rec = realNodeRecordData{Dir: n.dir, BinDir: binDir, Sysctls: map[string]string{}}
	if _, err := os.Stat(cniCacheDir); os.IsNotExist(err) {
		n.rec.CNICache = true
	}
	for _, s := range realNodeSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			n.rec.Sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	for _, d := range []string{realNodeState, n.dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	data, _ := json.Marshal(n.rec)
	if err := os.WriteFile(realNodeRecord, data, 0o644); err != nil {
		return err
	}
	_ = os.Symlink(realNodeState, filepath.Join(n.dir, "state"))

	if err := createCgroupRoot(); err != nil {
		return err
	}
	if err := createBridge(); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the image registry on 127.0.0.1:%d\n", ports.registry)
	registry := "127.0.0.1:" + strconv.Itoa(ports.registry)
	if err := n.startRegistry(ctx, registry); err != nil {
		return err
	}
	n.registry = registry
	if err := pushImages(ctx, filepath.Join(binDir, "images"), registry); err != nil {
		return fmt.Errorf("push the images to the local registry: %w", err)
	}

	fmt.Fprintf(progress, "Starting the cluster DNS (CoreDNS) on %s:53\n", DNSAddress)
	if err := c.startDNS(ctx, tokens.dns, ports.dnsReady); err != nil {
		return err
	}

	if err := c.exposeAPIServerToPods(ctx); err != nil {
		return err
	}

	fmt.Fprintln(progress, "Starting containerd")
	if err := n.startContainerd(ctx, registry); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the kubelet (node %s, port %d) and kube-proxy\n", RealNodeName, ports.kubelet)
	kubeletConfig := filepath.Join(n.dir, "kubelet.kubeconfig")
	proxyConfig := filepath.Join(n.dir, "kube-proxy.kubeconfig")
	if err := c.writeKubeconfig(kubeletConfig, "system:node:"+RealNodeName, tokens.kubelet); err != nil {
		return err
	}
	if err := c.writeKubeconfig(proxyConfig, "system:kube-proxy", tokens.proxy); err != nil {
		return err
	}
	if err := n.startKubelet(kubeletConfig, keys.caCert, ports); err != nil {
		return err
	}
	if err := n.startKubeProxy(proxyConfig, ports); err != nil {
		return err
	}
	if err := c.waitRealNodeReady(ctx); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the volume provisioner of the StorageClasses %s (default) and %s\n", StorageClassStandard, StorageClassGP2)
	if n.stopStorage, err = c.startStorage(ctx, filepath.Join(n.dir, "volumes")); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting metrics-server on %s:%d\n", bridgeIP, ports.metricsServer)
	msConfig := filepath.Join(n.dir, "metrics-server.kubeconfig")
	if err := c.writeKubeconfig(msConfig, "metrics-server", tokens.metricsServer); err != nil {
		return err
	}
	return c.startMetricsServer(ctx, msConfig, keys.caCert, ports.metricsServer)
}

// startMetricsServer runs metrics-server as a process on the node's address
// and registers it as the metrics.k8s.io API: a Service without selector
// whose one endpoint is that address, and an APIService. The kubelet's
// serving certificate is self-signed, and so is metrics-server's.
func (c *Cluster) startMetricsServer(ctx context.Context, kubeconfig, caCert string, port int) error {
	n := c.node
	if err := n.run("metrics-server", nil,
		"--secure-port="+strconv.Itoa(port),
		"--bind-address="+bridgeIP,
		"--cert-dir="+filepath.Join(n.dir, "metrics-server-certs"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--requestheader-client-ca-file="+caCert,
		"--kubelet-insecure-tls",
		// The kubelet's port is the one its Node reports, not 10250.
		"--kubelet-use-node-status-port",
		"--kubelet-preferred-address-types=InternalIP",
		"--metric-resolution=15s",
		"--kubelet-request-timeout=5s",
		"--v=1",
	); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	const name, ns = "metrics-server", metav1.NamespaceSystem
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", ns, name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "app-operator-local-cluster"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{bridgeIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", ns, name, err)
	}
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group":                 "metrics.k8s.io",
			"version":               "v1beta1",
			"service":               map[string]any{"namespace": ns, "name": name, "port": int64(443)},
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
	if _, err := apiServices.Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create APIService v1beta1.metrics.k8s.io: %w", err)
	}
	return n.poll(ctx, time.Minute, "APIService v1beta1.metrics.k8s.io", func() error {
		got, err := apiServices.Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" {
				if m["status"] == "True" {
					return nil
				}
				return fmt.Errorf("Available=%v: %v", m["status"], m["message"]) //nolint:staticcheck // Available is the condition's name.
			}
		}
		return errors.New("no Available condition yet")
	})
}

// lockRealNode takes the machine-wide lock of the real node, waiting for
// another cluster's node to stop.
func lockRealNode(ctx context.Context, progress io.Writer) (*os.File, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", realNodeLock, err)
		}
		if !said {
			fmt.Fprintln(progress, "Waiting for another cluster's real node to stop (lock", realNodeLock+")")
			said = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("another cluster's real node holds %s: %w", realNodeLock, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (n *realNode) run(name string, env []string, args ...string) error {
	p, err := startProcessEnv(filepath.Join(n.binDir, name), args, filepath.Join(n.dir, "logs", name+".log"), env)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	n.procs = append(n.procs, p)
	return nil
}

func (n *realNode) exited() error {
	for _, p := range n.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v; last log lines:\n%s", p.name, p.err, p.tail(20))
		default:
		}
	}
	return nil
}

func (n *realNode) startRegistry(ctx context.Context, addr string) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "logs"), 0o755); err != nil {
		return err
	}
	config := filepath.Join(n.dir, "registry.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(n.dir, "registry"), addr)), 0o644); err != nil {
		return err
	}
	if err := n.run("registry", nil, "serve", config); err != nil {
		return err
	}
	return n.poll(ctx, 30*time.Second, "registry at "+addr, func() error {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

// pushImages copies every image of the OCI layout at dir to the registry at
// addr, under its reference's repository and tag: docker.io/library/nginx:1.7.9
// becomes addr/library/nginx:1.7.9, which containerd finds through its
// mirror configuration.
func pushImages(ctx context.Context, dir, addr string) error {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range manifest.Manifests {
		ref, err := imagename.ParseReference(desc.Annotations["org.opencontainers.image.ref.name"])
		if err != nil {
			return err
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		if err := writeImage(ctx, img, ref, addr); err != nil {
			return err
		}
	}
	return nil
}

func (n *realNode) startContainerd(ctx context.Context, registry string) error {
	certs := filepath.Join(n.dir, "containerd", "certs.d")
	// Every registry is served by the local one: the samples' (docker.io),
	// the sandbox image's (registry.k8s.io), quay.io, and through _default
	// any other, so that a pull never leaves the machine; an image the
	// local registry lacks fails to pull, as a missing image does anywhere.
	for _, host := range []string{"docker.io", "registry.k8s.io", "quay.io", "_default"} {
		if err := os.MkdirAll(filepath.Join(certs, host), 0o755); err != nil {
			return err
		}
		hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", registry, registry)
		if err := os.WriteFile(filepath.Join(certs, host, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return err
		}
	}
	cniConf := filepath.Join(n.dir, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return err
	}
	// Pods route their subnet on the bridge and the Services' cluster IPs
	// through the node, where kube-proxy translates them; nothing else.
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": %q}],
      "dataDir": %q
    }
  }]
}
`, cniNetworkName, bridgeName, podSubnet, bridgeIP, serviceCIDR, filepath.Join(n.dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(cniConf, "10-app-operator.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	root := filepath.Join(n.dir, "containerd", "root")
	config := filepath.Join(n.dir, "containerd.toml")
	toml := fmt.Sprintf(`version = 4
root = %q
state = %q
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri"]

[plugins.'io.containerd.server.v1.grpc']
  address = %q

[plugins.'io.containerd.server.v1.ttrpc']
  address = %q

[plugins.'io.containerd.shim.v1.manager']
  socket_dir = %q

[plugins.'io.containerd.server.v1.debug']
  address = ""

[plugins.'io.containerd.server.v1.metrics']
  address = ""

[plugins.'io.containerd.internal.v1.opt']
  path = %q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.k8s.io/pause:3.10.2"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = %q

[plugins.'io.containerd.cri.v1.runtime']
  # These machines lack CAP_SYS_RESOURCE: a sandbox may not lower its OOM
  # score below containerd's.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false
`, root, filepath.Join(realNodeState, "containerd"), realNodeSocket, realNodeSocket+".ttrpc", filepath.Join(realNodeState, "s"),
		filepath.Join(root, "opt"), certs, cniPluginDir, cniConf,
		filepath.Join(n.binDir, "runc"), filepath.Join(realNodeState, "runc"))
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		return err
	}
	// containerd finds its shim on PATH.
	env := append(os.Environ(), "PATH="+n.binDir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	if err := n.run("containerd", env, "--config="+config); err != nil {
		return err
	}
	return n.poll(ctx, 60*time.Second, "containerd's CRI", func() error {
		return criReady(ctx)
	})
}

// criReady asks containerd whether its runtime and network are ready.
func criReady(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+realNodeSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := runtimeapi.NewRuntimeServiceClient(conn).Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	ready := 0
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type != runtimeapi.RuntimeReady && cond.Type != runtimeapi.NetworkReady {
			continue
		}
		if !cond.Status {
			return fmt.Errorf("%s: %s", cond.Type, cond.Message)
		}
		ready++
	}
	if ready != 2 {
		return errors.New("the runtime reports no readiness")
	}
	return nil
}

func (n *realNode) startKubelet(kubeconfig, caCert string, ports realNodePorts) error {
	config := filepath.Join(n.dir, "kubelet.yaml")
	yaml := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%s
# cgroup v1 with the machine's own processes beside: the kubelet keeps to a
# cgroup tree of its own and enforces no reservation on the host.
failCgroupV1: false
# A tenth of a CPU kept out of the node's allocatable for its own
# processes, as real nodes do: a pod asking for all the machine's CPUs
# never fits, rather than fit or not by which pod the scheduler takes first.
systemReserved:
  cpu: 100m
cgroupDriver: cgroupfs
cgroupRoot: /%s
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
podLogsDir: %s
volumePluginDir: %s
resolvConf: ""
clusterDNS: [%s]
clusterDomain: %s
serializeImagePulls: false
# The disk is shared with other work: no eviction for its use by others.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
  imagefs.inodesFree: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, bridgeIP, ports.kubelet, ports.kubeletHealthz, caCert, realNodeSocket, realNodeCgroup,
		filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "volume-plugins"), DNSAddress, ClusterDomain)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return err
	}
	return n.run("kubelet", nil,
		"--config="+config,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.dir, "kubelet-pki"),
		"--hostname-override="+RealNodeName,
		// A loopback node IP is refused: the node is reached at the bridge's
		// own address.
		"--node-ip="+bridgeIP,
		"--v=1",
	)
}

func (n *realNode) startKubeProxy(kubeconfig string, ports realNodePorts) error {
	config := filepath.Join(n.dir, "kube-proxy.yaml")
	yaml := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
# NodePorts answer on loopback only.
nodePortAddresses: ["127.0.0.0/8"]
clusterCIDR: %s
# Leave the host's conntrack settings as they are.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, RealNodeName, ports.proxyHealthz, ports.proxyMetrics, podSubnet)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return err
	}
	return n.run("kube-proxy", nil, "--config="+config, "--v=1")
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

// waitRealNodeReady waits until the node is Ready and the default
// ServiceAccount exists (pods are rejected until it does).
func (c *Cluster) waitRealNodeReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	return c.node.poll(ctx, 2*time.Minute, "node "+RealNodeName, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message) //nolint:staticcheck // Ready is the condition's name.
				}
				_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
				return err
			}
		}
		return errors.New("no Ready condition yet")
	})
}

// stop stops the node and removes from the host everything it added: the
// pods (through the runtime, so that their networks are torn down), the
// processes, the iptables chains of kube-proxy and the kubelet, the bridge,
// the mounts, the cgroups and the changed kernel settings. The run folder
// keeps the logs.
func (n *realNode) stop() error {
	var errs []error
	if n.stopStorage != nil {
		n.stopStorage()
		n.stopStorage = nil
	}
	stopNamed := func(name string) {
		for _, p := range n.procs {
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
	if err := removeSandboxes(); err != nil {
		errs = append(errs, err)
	}
	proxyErr := <-proxyDone
	errs = append(errs, proxyErr)
	stopNamed("metrics-server")
	stopNamed("coredns")
	stopNamed("containerd")
	stopNamed("registry")
	n.procs = nil
	if n.rec.Dir != "" {
		errs = append(errs, cleanupRealNode(n.rec, proxyErr == nil))
	}
	if n.lock != nil {
		_ = n.lock.Close()
		n.lock = nil
	}
	return errors.Join(errs...)
}

// removeSandboxes stops and removes every pod sandbox through containerd's
// CRI, which kills the containers and deletes their networks.
func removeSandboxes() error {
	if _, err := os.Stat(realNodeSocket); err != nil {
		return nil
	}
	conn, err := grpc.NewClient("unix://"+realNodeSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
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

// cleanupRealNode removes what a real node added to the host, whether it
// stopped cleanly or was killed. It touches only what the node created: the
// processes in its own cgroup tree, the shims of its own containerd, mounts
// under its own folders, its iptables chains, its bridge.
func cleanupRealNode(rec realNodeRecordData, proxyCleaned bool) error {
	var errs []error
	killCgroupProcesses()
	killShims()
	for _, dir := range []string{realNodeState, rec.Dir} {
		errs = append(errs, unmountUnder(dir))
	}
	if !proxyCleaned {
		errs = append(errs, kubeProxyCleanup(rec.BinDir))
	}
	errs = append(errs, removeKubeletChains())
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %v: %s", bridgeName, err, out))
		}
	}
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
	return errors.Join(errs...)
}

// kubeProxyCleanup removes kube-proxy's rules and chains.
func kubeProxyCleanup(binDir string) error {
	if out, err := exec.Command(filepath.Join(binDir, "kube-proxy"), "--cleanup").CombinedOutput(); err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

// cgroupHierarchies are the mounted cgroup hierarchies (v1 controllers,
// and the v2 tree beside them).
func cgroupHierarchies() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			dirs = append(dirs, fields[4])
		}
	}
	return dirs
}

// createCgroupRoot creates the kubelet's cgroup root in every v1 hierarchy
// (the kubelet requires it to exist). A new cpuset cgroup starts with no
// CPUs or memory nodes: it gets its parent's.
func createCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, "cgroup.controllers")); err == nil {
			continue // the v2 tree: runc creates what it needs there
		}
		dir := filepath.Join(h, realNodeCgroup)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("set %s of %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}

// killCgroupProcesses kills every process in the node's cgroup tree: the
// pods' processes that outlived their runtime.
func killCgroupProcesses() {
	for attempt := 0; attempt < 20; attempt++ {
		found := false
		for _, h := range cgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, realNodeCgroup), func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				if err != nil {
					return nil
				}
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killShims kills the runc shims of this node's containerd (found by the
// containerd address on their command line).
func killShims() {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != shimBinary {
			continue
		}
		if !slices.Contains(args, realNodeSocket) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder detaches every mount point at or under dir, deepest first.
func unmountUnder(dir string) error {
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

// removeCgroupRoot removes the node's cgroup tree from every hierarchy,
// innermost cgroups first.
func removeCgroupRoot() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, realNodeCgroup)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for try := 0; try < 20; try++ {
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

func createBridge() error {
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err != nil {
		if out, err := exec.Command("ip", "link", "add", bridgeName, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("create bridge %s: %v: %s", bridgeName, err, out)
		}
	}
	for _, args := range [][]string{
		{"addr", "replace", bridgeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// The chains the kubelet creates for other components (kube-proxy --cleanup
// leaves them): table, chain.
var kubeletChains = [][2]string{
	{"filter", "KUBE-FIREWALL"},
	{"filter", "KUBE-KUBELET-CANARY"},
	{"nat", "KUBE-KUBELET-CANARY"},
	{"mangle", "KUBE-KUBELET-CANARY"},
	{"mangle", "KUBE-IPTABLES-HINT"},
}

// removeKubeletChains deletes the kubelet's chains and every rule that
// jumps to them, for IPv4 and IPv6.
func removeKubeletChains() error {
	var errs []error
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, tc := range kubeletChains {
			table, chain := tc[0], tc[1]
			out, err := exec.Command(ipt, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			exists := false
			for _, line := range strings.Split(string(out), "\n") {
				args := splitRule(line)
				if len(args) >= 2 && args[0] == "-N" && args[1] == chain {
					exists = true
				}
				if len(args) < 2 || args[0] != "-A" || args[1] == chain || !slicesContainsPair(args, "-j", chain) {
					continue
				}
				args[0] = "-D"
				if o, err := exec.Command(ipt, append([]string{"-w", "-t", table}, args...)...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s: %v: %s", ipt, table, strings.Join(args, " "), err, o))
				}
			}
			if !exists {
				continue
			}
			for _, op := range []string{"-F", "-X"} {
				if o, err := exec.Command(ipt, "-w", "-t", table, op, chain).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s %s: %v: %s", ipt, table, op, chain, err, o))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func slicesContainsPair(args []string, a, b string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == a && args[i+1] == b {
			return true
		}
	}
	return false
}

// splitRule splits a line of `iptables -S` into arguments; comments are
// double-quoted.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, has := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && inQuote && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case ch == '"':
			inQuote, has = !inQuote, true
		case ch == ' ' && !inQuote:
			if has || cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if has || cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
