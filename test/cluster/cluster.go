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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
	// Nodes is how many real nodes the RealPods profile runs: one on the
	// host's own network when 0 or 1, or each in a network namespace of
	// its own (realnode_agent.go).
	Nodes int
	// ObjectStore starts an S3 object store with the RealPods profile's
	// nodes (objectstore.go): the binary that the OBJECTSTORE
	// environment variable names. Cluster.ObjectStore says where it
	// answers.
	ObjectStore bool
	// MaxPods is how many pods the kubelet of each real node admits: the
	// kubelet's default (110) when 0. A node that runs dozens of data
	// services of three pods each needs more.
	MaxPods int
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
	binDir, realNodeBinDir, err := findBinaries(opts)
	if err != nil {
		return nil, err
	}
	var objectStoreBin string
	if opts.ObjectStore {
		if opts.Profile != RealPods {
			return nil, errors.New("the object store comes with the RealPods profile only")
		}
		if objectStoreBin, err = objectStoreBinary(); err != nil {
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
	ports, err := newClusterPorts()
	if err != nil {
		return nil, err
	}
	cl.host = "https://127.0.0.1:" + strconv.Itoa(ports.api)

	etcdURL, err := cl.startEtcd(ports, progress)
	if err != nil {
		return nil, err
	}
	tokens := newClusterTokens(opts.Nodes)
	tokenFile, err := cl.writeTokenFile(tokens)
	if err != nil {
		return nil, err
	}
	if err := cl.startAPIServer(ctx, opts, keys, ports.api, etcdURL, tokenFile, progress); err != nil {
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
	for path, token := range map[string]string{kcmConfig: tokens.controllerManager, schedConfig: tokens.scheduler, kwokConfig: tokens.kwok} {
		if err := cl.writeKubeconfig(path, strings.TrimSuffix(filepath.Base(path), ".kubeconfig"), token); err != nil {
			return nil, err
		}
	}
	if err := cl.startControllers(opts, keys, ports, kcmConfig, schedConfig, progress); err != nil {
		return nil, err
	}
	if opts.Profile == RealPods {
		if err := cl.startRealNode(ctx, realNodeBinDir, objectStoreBin, opts.Nodes, opts.MaxPods, ports.node, tokens.node, keys, progress); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "Cluster ready (%s Ready, pods run for real)\n", strings.Join(cl.NodeNames(), ", "))
		return cl, nil
	}
	if err := cl.startFakeNode(ctx, kwokConfig, ports.kwok); err != nil {
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
// (etcd, kube-apiserver, ...; a node's among several as kubelet/realnode-1).
func (c *Cluster) Pids() map[string]int {
	pids := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		pids[p.name] = p.cmd.Process.Pid
	}
	if c.node != nil {
		for _, p := range c.node.procs {
			pids[p.name] = p.cmd.Process.Pid
		}
		for _, a := range c.node.agents {
			for _, p := range a.procs {
				key := p.name
				if len(c.node.agents) > 1 {
					key += "/" + a.name
				}
				pids[key] = p.cmd.Process.Pid
			}
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
