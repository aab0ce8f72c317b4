// Package cluster starts and stops a real, local Kubernetes control plane
// built from source: etcd and kube-apiserver (the APIOnly profile), plus
// kube-controller-manager, kube-scheduler and kwok with one fake Ready node
// (the Full profile), or a real node instead of kwok's (the RealPods profile,
// realnode.go). Tests, the demo and the benchmarks all use it.
//
// Every cluster gets free loopback ports, its own key material and a run
// folder holding a kubeconfig and the logs of every component. Every process
// is stopped by Stop, and is killed by the kernel if the process that started
// it dies first, so nothing outlives a failed or interrupted run.
package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Profile selects which components run.
type Profile string

const (
	// APIOnly runs etcd and kube-apiserver: API semantics, validation,
	// server-side apply, RBAC and admission, but no built-in controllers.
	APIOnly Profile = "api-only"
	// Full adds kube-controller-manager, kube-scheduler and kwok with one fake
	// node: rollouts, pods that turn Running, garbage collection, quotas, HPAs.
	Full Profile = "full"
	// RealPods is Full with a real node instead of kwok's: a kubelet,
	// containerd, runc, CNI bridge networking, kube-proxy and a local image
	// registry, so that pods really run. Root only, one per machine at a
	// time; see RealPodsSupported and docs/real-pods.md.
	RealPods Profile = "real-pods"
)

// FakeNodeName is the name of the kwok-managed node of the Full profile.
const FakeNodeName = "kwok-node-0"

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
	adminUser   = "local-admin"
)

// Options configure Start.
type Options struct {
	// Profile selects the components; APIOnly when empty.
	Profile Profile
	// BinDir holds the control-plane binaries. Empty means the folder that
	// `make controlplane` fills, found from the working directory.
	BinDir string
	// Dir is the run folder. Empty means a new folder under bin/runs.
	Dir string
	// Progress receives one line per start-up step; nil discards them.
	Progress io.Writer
	// CRDDir, when set, holds CRD YAML files (such as config/crd/bases)
	// installed before the controller manager starts: its garbage collector
	// learns new kinds only every 30 s, so children of resources of a kind
	// installed later outlive their owner that long.
	CRDDir string
	// AuditPolicy, when set, is an audit policy (YAML) for kube-apiserver,
	// which then logs to AuditLogPath as JSON lines: the API server's own
	// record of who made which request.
	AuditPolicy string
	// ControllerManagerArgs are further flags for kube-controller-manager
	// (Full profile), after the defaults, so that they override them.
	ControllerManagerArgs []string
	// RealNodeBinDir holds the RealPods profile's node binaries and images.
	// Empty means the folder that `make realnode` fills.
	RealNodeBinDir string
}

// AuditLogPath is where kube-apiserver writes its audit log when
// Options.AuditPolicy is set.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.Dir, "logs", "audit.log") }

// Cluster is a running local control plane.
type Cluster struct {
	// Dir is the run folder: kubeconfig, key material, component logs.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig for this cluster.
	Kubeconfig string

	binDir     string
	host       string
	caPEM      []byte
	adminToken string
	procs      []*process
	node       *realNode
}

// Start builds nothing: it runs the binaries found in BinDir and returns once
// the cluster is ready (and, for Full, once the fake node is Ready).
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts.Profile = cmp.Or(opts.Profile, APIOnly)
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = DefaultBinDir(); err != nil {
			return nil, err
		}
	}
	if err := checkBinaries(binDir, opts.Profile); err != nil {
		return nil, err
	}
	realNodeBinDir := opts.RealNodeBinDir
	if opts.Profile == RealPods {
		if err := RealPodsSupported(); err != nil {
			return nil, err
		}
		if realNodeBinDir == "" {
			if realNodeBinDir, err = DefaultRealNodeBinDir(); err != nil {
				return nil, err
			}
		}
		if err := checkRealNodeBinaries(realNodeBinDir); err != nil {
			return nil, err
		}
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = newRunDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}

	cl := &Cluster{Dir: dir, binDir: binDir, adminToken: randomToken()}
	defer func() {
		if err != nil {
			_ = cl.Stop()
			err = fmt.Errorf("%w (component logs in %s)", err, filepath.Join(dir, "logs"))
		}
	}()

	keys, err := writePKI(dir)
	if err != nil {
		return nil, fmt.Errorf("generate key material: %w", err)
	}
	cl.caPEM = keys.caCertPEM
	ports, err := freePorts(13)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	nodePorts := realNodePorts{registry: ports[6], kubelet: ports[7], kubeletHealthz: ports[8], proxyHealthz: ports[9], proxyMetrics: ports[10], metricsServer: ports[11], dnsReady: ports[12]}
	cl.host = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	fmt.Fprintf(progress, "Starting etcd on 127.0.0.1:%d\n", etcdClient)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if err := cl.run("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	// Static tokens: the admin (system:masters) and the identities of the
	// other components. Tests mint ServiceAccount tokens through the API.
	cmToken, schedToken, kwokToken := randomToken(), randomToken(), randomToken()
	nodeTokens := realNodeTokens{kubelet: randomToken(), proxy: randomToken(), metricsServer: randomToken(), dns: randomToken()}
	tokens := strings.Join([]string{
		cl.adminToken + "," + adminUser + ",local-admin-uid,system:masters",
		cmToken + ",system:kube-controller-manager,kcm-uid,system:masters",
		schedToken + ",system:kube-scheduler,sched-uid,system:masters",
		kwokToken + ",kwok,kwok-uid,system:masters",
		// The real node's kubelet and kube-proxy (RealPods profile).
		nodeTokens.kubelet + ",system:node:" + RealNodeName + ",kubelet-uid,\"system:nodes,system:masters\"",
		nodeTokens.proxy + ",system:kube-proxy,kube-proxy-uid,system:node-proxier",
		nodeTokens.metricsServer + ",metrics-server,metrics-server-uid,system:masters",
		nodeTokens.dns + "," + dnsUser + ",coredns-uid",
	}, "\n") + "\n"
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return nil, err
	}

	var auditArgs []string
	// Loopback only, but with real pods: they reach the API server through
	// the kubernetes Service, whose endpoint is the node's bridge address
	// (see exposeAPIServerToPods).
	bindAddress := "127.0.0.1"
	if opts.Profile == RealPods {
		bindAddress = "0.0.0.0"
		// The API server's identity towards the kubelet (logs, exec,
		// port-forward); the kubelet's own serving certificate is
		// self-signed, so it is not verified.
		auditArgs = append(auditArgs,
			"--kubelet-client-certificate="+keys.kubeletClientCrt,
			"--kubelet-client-key="+keys.kubeletClientKey,
			"--kubelet-preferred-address-types=InternalIP",
			// metrics-server is an aggregated API server, reached at its
			// endpoint (a process on the node's address, not a pod).
			"--requestheader-client-ca-file="+keys.caCert,
			"--requestheader-allowed-names="+frontProxyClientName,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file="+keys.frontProxyClientCrt,
			"--proxy-client-key-file="+keys.frontProxyClientKey,
			"--enable-aggregator-routing=true")
	}
	if opts.AuditPolicy != "" {
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(opts.AuditPolicy), 0o600); err != nil {
			return nil, err
		}
		auditArgs = append(auditArgs,
			"--audit-policy-file="+policy,
			"--audit-log-path="+cl.AuditLogPath(),
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=0")
	}

	fmt.Fprintf(progress, "Starting kube-apiserver on %s\n", cl.host)
	if err := cl.run("kube-apiserver", append(auditArgs,
		"--etcd-servers="+etcdURL,
		"--bind-address="+bindAddress,
		"--advertise-address=127.0.0.1",
		// The kubernetes Service's endpoint may not be loopback: without
		// real pods nothing uses it; with them, exposeAPIServerToPods
		// sets it to the node's bridge address.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+keys.servingCrt,
		"--tls-private-key-file="+keys.servingKey,
		"--token-auth-file="+tokenFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-key-file="+keys.saPub,
		"--service-account-signing-key-file="+keys.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range="+serviceCIDR,
		"--allow-privileged=true",
		"--v=1",
	)...); err != nil {
		return nil, err
	}
	if err := cl.waitReady(ctx); err != nil {
		return nil, err
	}
	if err := cl.writeKubeconfig(filepath.Join(dir, "kubeconfig"), adminUser, cl.adminToken); err != nil {
		return nil, err
	}
	cl.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if opts.CRDDir != "" {
		fmt.Fprintln(progress, "Installing the CRDs in", opts.CRDDir)
		if err := cl.InstallCRDs(ctx, opts.CRDDir); err != nil {
			return nil, err
		}
	}
	if opts.Profile == APIOnly {
		fmt.Fprintln(progress, "Cluster ready (etcd, kube-apiserver)")
		return cl, nil
	}

	kcmConfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	schedConfig := filepath.Join(dir, "kube-scheduler.kubeconfig")
	kwokConfig := filepath.Join(dir, "kwok.kubeconfig")
	for path, token := range map[string]string{kcmConfig: cmToken, schedConfig: schedToken, kwokConfig: kwokToken} {
		if err := cl.writeKubeconfig(path, strings.TrimSuffix(filepath.Base(path), ".kubeconfig"), token); err != nil {
			return nil, err
		}
	}

	if opts.Profile == RealPods {
		fmt.Fprintln(progress, "Starting kube-controller-manager and kube-scheduler")
	} else {
		fmt.Fprintln(progress, "Starting kube-controller-manager, kube-scheduler and kwok")
	}
	if err := cl.run("kube-controller-manager", append([]string{
		"--kubeconfig=" + kcmConfig,
		"--authentication-kubeconfig=" + kcmConfig,
		"--authorization-kubeconfig=" + kcmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--controllers=*",
		"--leader-elect=false",
		"--service-account-private-key-file=" + keys.saKey,
		"--root-ca-file=" + keys.caCert,
		"--service-cluster-ip-range=" + serviceCIDR,
		// Fast horizontal pod autoscaler resyncs keep HPA tests short.
		"--horizontal-pod-autoscaler-sync-period=5s",
		// kwok renews a node's status every 20 to 45 s. Past the default
		// grace period of 50 s, an API server outage of 30 s marks the nodes
		// NotReady and their pods not Ready, which kwok, unlike a kubelet,
		// never turns back.
		"--node-monitor-grace-period=2m",
		"--v=1",
	}, opts.ControllerManagerArgs...)...); err != nil {
		return nil, err
	}
	if err := cl.run("kube-scheduler",
		"--kubeconfig="+schedConfig,
		"--authentication-kubeconfig="+schedConfig,
		"--authorization-kubeconfig="+schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false",
		"--v=1",
	); err != nil {
		return nil, err
	}
	if opts.Profile == RealPods {
		if err := cl.startRealNode(ctx, realNodeBinDir, nodePorts, nodeTokens, keys, progress); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "Cluster ready (node %s Ready, pods run for real)\n", RealNodeName)
		return cl, nil
	}
	if err := cl.run("kwok",
		"--kubeconfig="+kwokConfig,
		"--config="+filepath.Join(binDir, "kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--server-address=127.0.0.1:"+strconv.Itoa(kwokPort),
		"--cidr=10.244.0.0/16",
		"--node-ip=127.0.0.1",
	); err != nil {
		return nil, err
	}
	if err := cl.addFakeNode(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "Cluster ready (node %s Ready)\n", FakeNodeName)
	return cl, nil
}

// Config returns a client configuration with cluster-admin rights.
func (c *Cluster) Config() *rest.Config {
	return &rest.Config{
		Host:            c.host,
		BearerToken:     c.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// ServiceAccountConfig mints a token for the ServiceAccount namespace/name
// (which must exist) and returns a client configuration that authenticates
// as that ServiceAccount only, with no other credential.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return nil, err
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return &rest.Config{
		Host:            c.host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caPEM},
	}, nil
}

// Pids returns the process id of every running component, by name
// (etcd, kube-apiserver, ...).
func (c *Cluster) Pids() map[string]int {
	pids := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		pids[p.name] = p.cmd.Process.Pid
	}
	if c.node != nil {
		for _, p := range c.node.procs {
			pids[p.name] = p.cmd.Process.Pid
		}
	}
	return pids
}

// BinDir is the folder the control-plane binaries (kubectl among them) came from.
func (c *Cluster) BinDir() string { return c.binDir }

// Stop stops every component, newest first, and removes the etcd data. The
// run folder with its logs stays; RemoveDir deletes it.
func (c *Cluster) Stop() error {
	var errs []error
	// The node first, while the API server still answers.
	if c.node != nil {
		errs = append(errs, c.node.stop())
		c.node = nil
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	errs = append(errs, os.RemoveAll(filepath.Join(c.Dir, "etcd")))
	return errors.Join(errs...)
}

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 10 s),
// leaves it down for downFor, then starts it again with the same command
// line, on the same port and against the same etcd, and returns once it is
// ready. The other components and the clients of the cluster are not
// touched: they see the outage as a real one.
func (c *Cluster) RestartAPIServer(ctx context.Context, downFor time.Duration) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return errors.New("kube-apiserver is not running in this cluster")
	}
	old := c.procs[i]
	if err := old.stop(10 * time.Second); err != nil {
		return err
	}
	select {
	case <-time.After(downFor):
	case <-ctx.Done():
	}
	p, err := startProcess(old.cmd.Path, old.cmd.Args[1:], old.log)
	if err != nil {
		return fmt.Errorf("restart kube-apiserver: %w", err)
	}
	c.procs[i] = p
	return c.waitReady(ctx)
}

// RemoveDir deletes the run folder. Call it after Stop, when the logs are no
// longer wanted (for example after a passing test run).
func (c *Cluster) RemoveDir() error { return os.RemoveAll(c.Dir) }

func (c *Cluster) run(name string, args ...string) error {
	p, err := startProcess(filepath.Join(c.binDir, name), args, filepath.Join(c.Dir, "logs", name+".log"))
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	c.procs = append(c.procs, p)
	return nil
}

// waitReady polls /readyz until the apiserver answers ok, failing fast if a
// component exits.
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		last = err
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w (last answer: %v)", err, last)
	}
	return nil
}

func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v; last log lines:\n%s", p.name, p.err, p.tail(20))
		default:
		}
	}
	return nil
}

// addFakeNode registers the kwok node and waits until it is Ready and the
// default ServiceAccount exists (pods are rejected until it does).
func (c *Cluster) addFakeNode(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        FakeNodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": FakeNodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", FakeNodeName, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, FakeNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
				return err == nil, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready: %w", FakeNodeName, err)
	}
	return nil
}

func (c *Cluster) writeKubeconfig(path, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

func checkBinaries(binDir string, profile Profile) error {
	names := []string{"etcd", "kube-apiserver", "kubectl"}
	switch profile {
	case Full:
		names = append(names, "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml")
	case RealPods:
		names = append(names, "kube-controller-manager", "kube-scheduler")
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(binDir, n)); err != nil {
			return fmt.Errorf("control-plane binary %s missing in %s: run `make controlplane` first", n, binDir)
		}
	}
	return nil
}

// freePorts reserves n distinct free loopback ports. They are released before
// the components bind them; collisions with other processes are unlikely.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
