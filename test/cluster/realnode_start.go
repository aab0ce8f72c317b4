package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The real node's start: the steps that bring it up on top of the running
// control plane, in order.

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

	cleanupPreviousRealNode(progress)
	if err := n.recordHost(); err != nil {
		return err
	}
	if err := createCgroupRoot(); err != nil {
		return err
	}
	if err := createBridge(); err != nil {
		return err
	}
	if err := n.startImageRegistry(ctx, ports.registry, progress); err != nil {
		return err
	}

	fmt.Fprintf(progress, "Starting the cluster DNS (CoreDNS) on %s:53\n", DNSAddress)
	if err := c.startDNS(ctx, tokens.dns, ports.dnsReady); err != nil {
		return err
	}

	if err := c.exposeAPIServerToPods(ctx); err != nil {
		return err
	}

	fmt.Fprintln(progress, "Starting containerd")
	if err := n.startContainerd(ctx, n.registry); err != nil {
		return err
	}

	if err := c.startNodeAgents(ctx, ports, tokens, keys, progress); err != nil {
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
	return nil
}

// startImageRegistry starts the node's image registry on the loopback port
// and pushes to it the images `make realnode` saved, which containerd then
// pulls.
func (n *realNode) startImageRegistry(ctx context.Context, port int, progress io.Writer) error {
	fmt.Fprintf(progress, "Starting the image registry on 127.0.0.1:%d\n", port)
	registry := "127.0.0.1:" + strconv.Itoa(port)
	if err := n.startRegistry(ctx, registry); err != nil {
		return err
	}
	n.registry = registry
	if err := pushImages(ctx, filepath.Join(n.binDir, "images"), registry); err != nil {
		return fmt.Errorf("push the images to the local registry: %w", err)
	}
	return nil
}

// startNodeAgents starts the kubelet and kube-proxy, each with a kubeconfig
// of its own identity, and waits for the node to turn Ready.
func (c *Cluster) startNodeAgents(ctx context.Context, ports realNodePorts, tokens realNodeTokens, keys *pki, progress io.Writer) error {
	n := c.node
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
	return c.waitRealNodeReady(ctx)
}
