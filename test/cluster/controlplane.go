package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The control plane's start: the steps of Start that run etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, and what they
// share (binaries, ports, tokens, kubeconfigs, processes).

// findBinaries returns the folder of the control-plane binaries and, for
// the RealPods profile, that of the real node's, once it has checked that
// every file the profile runs is there (and that this machine can run real
// pods).
func findBinaries(opts Options) (binDir, realNodeBinDir string, err error) {
	binDir = opts.BinDir
	if binDir == "" {
		if binDir, err = DefaultBinDir(); err != nil {
			return "", "", err
		}
	}
	if err := checkBinaries(binDir, opts.Profile); err != nil {
		return "", "", err
	}
	realNodeBinDir = opts.RealNodeBinDir
	if opts.Profile == RealPods {
		if err := RealPodsSupported(); err != nil {
			return "", "", err
		}
		if realNodeBinDir == "" {
			if realNodeBinDir, err = DefaultRealNodeBinDir(); err != nil {
				return "", "", err
			}
		}
		if err := checkRealNodeBinaries(realNodeBinDir); err != nil {
			return "", "", err
		}
	}
	return binDir, realNodeBinDir, nil
}

// clusterPorts are the loopback ports of the cluster's components.
type clusterPorts struct {
	etcdClient, etcdPeer, api, controllerManager, scheduler, kwok int
	// node are the real node's (RealPods profile).
	node realNodePorts
}

// newClusterPorts reserves a free loopback port for every component of
// every profile.
func newClusterPorts() (clusterPorts, error) {
	ports, err := freePorts(13)
	if err != nil {
		return clusterPorts{}, err
	}
	return clusterPorts{
		etcdClient: ports[0], etcdPeer: ports[1], api: ports[2], controllerManager: ports[3], scheduler: ports[4], kwok: ports[5],
		node: realNodePorts{registry: ports[6], kubelet: ports[7], kubeletHealthz: ports[8], proxyHealthz: ports[9], proxyMetrics: ports[10], metricsServer: ports[11], dnsReady: ports[12]},
	}, nil
}

// startEtcd starts etcd on its loopback ports and returns its client URL.
func (c *Cluster) startEtcd(ports clusterPorts, progress io.Writer) (string, error) {
	fmt.Fprintf(progress, "Starting etcd on 127.0.0.1:%d\n", ports.etcdClient)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports.etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports.etcdPeer)
	if err := c.run("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return "", err
	}
	return etcdURL, nil
}

// clusterTokens are the static tokens of the components other than the
// admin. Tests mint ServiceAccount tokens through the API.
type clusterTokens struct {
	controllerManager, scheduler, kwok string
	// node are the real node's (RealPods profile).
	node realNodeTokens
}

// newClusterTokens makes a random token for every component, and for the
// kubelet of each of nodes real nodes.
func newClusterTokens(nodes int) clusterTokens {
	kubelets := make([]string, max(nodes, 1))
	for i := range kubelets {
		kubelets[i] = randomToken()
	}
	return clusterTokens{
		controllerManager: randomToken(), scheduler: randomToken(), kwok: randomToken(),
		node: realNodeTokens{kubelets: kubelets, proxy: randomToken(), metricsServer: randomToken(), dns: randomToken()},
	}
}

// writeTokenFile writes the API server's static token file: the admin
// (system:masters) and the identities of the other components. It returns
// the file's path.
func (c *Cluster) writeTokenFile(t clusterTokens) (string, error) {
	tokens := strings.Join([]string{
		c.adminToken + "," + adminUser + ",local-admin-uid,system:masters",
		t.controllerManager + ",system:kube-controller-manager,kcm-uid,system:masters",
		t.scheduler + ",system:kube-scheduler,sched-uid,system:masters",
		t.kwok + ",kwok,kwok-uid,system:masters",
		// The real node's kubelet and kube-proxy (RealPods profile).
		t.node.proxy + ",system:kube-proxy,kube-proxy-uid,system:node-proxier",
		t.node.metricsServer + ",metrics-server,metrics-server-uid,system:masters",
		t.node.dns + "," + dnsUser + ",coredns-uid",
	}, "\n") + "\n"
	// Each real node's kubelet (RealPods profile).
	for i, token := range t.node.kubelets {
		name := nodeName(len(t.node.kubelets), i)
		tokens += token + ",system:node:" + name + ",kubelet-uid-" + name + ",\"system:nodes,system:masters\"\n"
	}
	tokenFile := filepath.Join(c.Dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return "", err
	}
	return tokenFile, nil
}

// startAPIServer starts kube-apiserver against etcdURL, with the token
// file, on its port, and waits until it is ready.
func (c *Cluster) startAPIServer(ctx context.Context, opts Options, keys *pki, port int, etcdURL, tokenFile string, progress io.Writer) error {
	bindAddress, profileArgs, err := c.apiServerProfileArgs(opts, keys)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "Starting kube-apiserver on %s\n", c.host)
	if err := c.run("kube-apiserver", append(profileArgs,
		"--etcd-servers="+etcdURL,
		"--bind-address="+bindAddress,
		"--advertise-address=127.0.0.1",
		// The kubernetes Service's endpoint may not be loopback: without
		// real pods nothing uses it; with them, exposeAPIServerToPods
		// sets it to the node's bridge address.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
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
		return err
	}
	return c.waitReady(ctx)
}

// apiServerProfileArgs returns the address kube-apiserver listens on and
// its flags that depend on the options: those of the RealPods profile and
// those of the audit log.
func (c *Cluster) apiServerProfileArgs(opts Options, keys *pki) (string, []string, error) {
	var profileArgs []string
	// Loopback only, but with real pods: they reach the API server through
	// the kubernetes Service, whose endpoint is the node's bridge address
	// (see exposeAPIServerToPods).
	bindAddress := "127.0.0.1"
	if opts.Profile == RealPods {
		bindAddress = "0.0.0.0"
		// The API server's identity towards the kubelet (logs, exec,
		// port-forward); the kubelet's own serving certificate is
		// self-signed, so it is not verified.
		profileArgs = append(profileArgs,
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
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(opts.AuditPolicy), 0o600); err != nil {
			return "", nil, err
		}
		profileArgs = append(profileArgs,
			"--audit-policy-file="+policy,
			"--audit-log-path="+c.AuditLogPath(),
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=0")
	}
	return bindAddress, profileArgs, nil
}

// startControllers starts kube-controller-manager and kube-scheduler with
// their kubeconfigs.
func (c *Cluster) startControllers(opts Options, keys *pki, ports clusterPorts, kcmConfig, schedConfig string, progress io.Writer) error {
	if opts.Profile == RealPods {
		fmt.Fprintln(progress, "Starting kube-controller-manager and kube-scheduler")
	} else {
		fmt.Fprintln(progress, "Starting kube-controller-manager, kube-scheduler and kwok")
	}
	if err := c.run("kube-controller-manager", append([]string{
		"--kubeconfig=" + kcmConfig,
		"--authentication-kubeconfig=" + kcmConfig,
		"--authorization-kubeconfig=" + kcmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports.controllerManager),
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
		return err
	}
	return c.run("kube-scheduler",
		"--kubeconfig="+schedConfig,
		"--authentication-kubeconfig="+schedConfig,
		"--authorization-kubeconfig="+schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports.scheduler),
		"--leader-elect=false",
		"--v=1",
	)
}

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

func (c *Cluster) writeKubeconfig(path, user, token string) error {
	return c.writeKubeconfigFor(c.host, path, user, token)
}

// writeKubeconfigFor writes a kubeconfig that reaches the API server at
// server (the address a node in a network namespace reaches it at).
func (c *Cluster) writeKubeconfigFor(server, path, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.caPEM}
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
