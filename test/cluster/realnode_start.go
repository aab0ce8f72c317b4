package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The real node's start: the steps that bring it up on top of the running
// control plane, in order.

// startRealNode starts the nodes on top of the running control plane and
// returns once every node is Ready (and the object store answers, when
// objectStore names its binary). On failure the caller's Stop undoes
// what was done: c.node is set as soon as the machine-wide lock is held.
func (c *Cluster) startRealNode(ctx context.Context, binDir, objectStore string, nodes, maxPods int, ports realNodePorts, tokens realNodeTokens, keys *pki, progress io.Writer) error {
	lock, err := lockRealNode(ctx, progress)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.Dir, "realnode")
	n := &realNode{binDir: binDir, dir: dir, lock: lock, agents: newAgents(nodes, dir), hostIP: bridgeIP, ports: ports, caCert: keys.caCert, maxPods: maxPods}
	if len(n.agents) > 1 {
		n.hostIP = nodeBridgeIP
	}
	c.node = n

	cleanupPreviousRealNode(progress)
	if err := n.recordHost(); err != nil {
		return err
	}
	if err := createCgroupRoot(n.agents); err != nil {
		return err
	}
	if len(n.agents) > 1 {
		fmt.Fprintf(progress, "Creating the network of %d nodes (bridge %s at %s)\n", len(n.agents), nodeBridgeName, nodeBridgeIP)
		err = createNodeNetwork(n.agents)
	} else {
		err = createBridge()
	}
	if err != nil {
		return err
	}
	if objectStore != "" {
		// Started now, on the host's address that the network above
		// made; its start-up overlaps the nodes'.
		fmt.Fprintf(progress, "Starting the object store (S3) on %s\n", n.hostIP)
		if err := n.startObjectStore(objectStore); err != nil {
			return err
		}
	}
	if err := n.startImageRegistry(ctx, ports.registry, progress); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the cluster DNS (CoreDNS) on %s:53\n", n.hostIP)
	if err := c.startDNS(ctx, tokens.dns, ports.dnsReady); err != nil {
		return err
	}

	if err := c.exposeAPIServerToPods(ctx); err != nil {
		return err
	}

	for _, a := range n.agents {
		fmt.Fprintln(progress, "Starting containerd on", a.name)
		if err := n.startContainerd(ctx, a); err != nil {
			return err
		}
	}

	if err := c.startNodeAgents(ctx, ports, tokens, keys, progress); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the volume provisioner of the StorageClasses %s (default), %s and %s (which allows volume expansion)\n", StorageClassStandard, StorageClassGP2, StorageClassExpandable)
	if n.stopStorage, err = c.startStorage(ctx, n.agents); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting metrics-server on %s:%d\n", n.hostIP, ports.metricsServer)
	msConfig := filepath.Join(n.dir, "metrics-server.kubeconfig")
	if err := c.writeKubeconfig(msConfig, "metrics-server", tokens.metricsServer); err != nil {
		return err
	}
	if err := c.startMetricsServer(ctx, msConfig, keys.caCert, ports.metricsServer); err != nil {
		return err
	}
	if n.store != nil {
		return n.waitObjectStore(ctx, progress)
	}
	return nil
}

// cleanupPreviousRealNode removes what a run killed before its teardown
// left on the host: such a run leaves its record behind.
func cleanupPreviousRealNode(progress io.Writer) {
	if data, err := os.ReadFile(realNodeRecord); err == nil {
		var old realNodeRecordData
		if json.Unmarshal(data, &old) == nil {
			fmt.Fprintln(progress, "Removing what a previous real-node run left behind in", old.Dir)
			_ = cleanupRealNode(old, false)
		}
	}
}

// recordHost makes the node's folders and writes its record (its folders,
// whether it creates libcni's cache folder, the kernel settings to put
// back) before anything on the host changes.
func (n *realNode) recordHost() error {
	n.rec = realNodeRecordData{Dir: n.dir, BinDir: n.binDir, Sysctls: map[string]string{}}
	if _, err := os.Stat(cniCacheDir); os.IsNotExist(err) {
		n.rec.CNICache = true
	}
	for _, s := range realNodeSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			n.rec.Sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	// Its own logs folder too: the object store, started before the
	// registry that made it, logs there; with several nodes, no node's
	// folder is the real node's.
	dirs := make([]string, 0, 3+2*len(n.agents))
	dirs = append(dirs, realNodeState, n.dir, filepath.Join(n.dir, "logs"))
	for _, a := range n.agents {
		dirs = append(dirs, a.state, filepath.Join(a.dir, "logs"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	data, _ := json.Marshal(n.rec)
	if err := os.WriteFile(realNodeRecord, data, 0o644); err != nil {
		return err
	}
	_ = os.Symlink(realNodeState, filepath.Join(n.dir, "state"))
	return nil
}

// startImageRegistry starts the nodes' image registry and pushes to it the
// images `make realnode` saved, which containerd then pulls: on the
// loopback port for the one node, at the host's address for several.
func (n *realNode) startImageRegistry(ctx context.Context, port int, progress io.Writer) error {
	host := "127.0.0.1"
	if len(n.agents) > 1 {
		host = n.hostIP
	}
	registry := net.JoinHostPort(host, strconv.Itoa(port))
	fmt.Fprintln(progress, "Starting the image registry on", registry)
	if err := n.startRegistry(ctx, registry); err != nil {
		return err
	}
	n.registry = registry
	if err := pushImages(ctx, filepath.Join(n.binDir, "images"), registry); err != nil {
		return fmt.Errorf("push the images to the local registry: %w", err)
	}
	return nil
}

// startNodeAgents starts each node's kubelet and kube-proxy, each with a
// kubeconfig of its own identity (and, among several nodes, a kube-proxy
// on the host), and waits for every node to turn Ready.
func (c *Cluster) startNodeAgents(ctx context.Context, ports realNodePorts, tokens realNodeTokens, keys *pki, progress io.Writer) error {
	n := c.node
	// The nodes in network namespaces of their own reach the API server
	// at the host's address on the nodes' bridge.
	server := c.host
	if len(n.agents) > 1 {
		u, err := url.Parse(c.host)
		if err != nil {
			return err
		}
		server = "https://" + net.JoinHostPort(n.hostIP, u.Port())
	}
	proxyConfig := filepath.Join(n.dir, "kube-proxy.kubeconfig")
	for i, a := range n.agents {
		fmt.Fprintf(progress, "Starting the kubelet (node %s at %s, port %d) and kube-proxy\n", a.name, a.ip, ports.kubelet)
		kubeletConfig := a.kubeconfig("kubelet")
		if err := c.writeKubeconfigFor(server, kubeletConfig, "system:node:"+a.name, tokens.kubelets[i]); err != nil {
			return err
		}
		agentProxyConfig := a.kubeconfig("kube-proxy")
		if err := c.writeKubeconfigFor(server, agentProxyConfig, "system:kube-proxy", tokens.proxy); err != nil {
			return err
		}
		if err := n.startKubelet(a, kubeletConfig, keys.caCert, ports); err != nil {
			return err
		}
		if err := n.startKubeProxy(a, agentProxyConfig, ports); err != nil {
			return err
		}
	}
	for _, a := range n.agents {
		if err := c.waitRealNodeReady(ctx, a.name); err != nil {
			return err
		}
	}
	if len(n.agents) > 1 {
		fmt.Fprintln(progress, "Starting kube-proxy on the host")
		if err := c.writeKubeconfig(proxyConfig, "system:kube-proxy", tokens.proxy); err != nil {
			return err
		}
		if err := n.startKubeProxy(nil, proxyConfig, ports); err != nil {
			return err
		}
		// /livez: its /healthz also wants the Node it names, which it has not.
		healthz := "http://127.0.0.1:" + strconv.Itoa(ports.proxyHealthz) + "/livez"
		return n.poll(ctx, 2*time.Minute, "kube-proxy on the host", func() error { return answersOK(healthz) })
	}
	return nil
}

// NodeNames are the names of the RealPods profile's nodes, in order; nil
// for the other profiles.
func (c *Cluster) NodeNames() []string {
	if c.node == nil {
		return nil
	}
	names := make([]string, len(c.node.agents))
	for i, a := range c.node.agents {
		names[i] = a.name
	}
	return names
}
