package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The real node's agents: the kubelet and kube-proxy, and the wait for the
// node to turn Ready.

func (n *realNode) startKubelet(a *agent, kubeconfig, caCert string, ports realNodePorts) error {
	config := filepath.Join(a.dir, "kubelet.yaml")
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
`, a.ip, ports.kubelet, ports.kubeletHealthz, caCert, a.socket(), a.cgroup,
		filepath.Join(a.dir, "pod-logs"), filepath.Join(a.dir, "volume-plugins"), n.hostIP, ClusterDomain)
	if n.maxPods > 0 {
		yaml += fmt.Sprintf("maxPods: %d\n", n.maxPods)
	}
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return err
	}
	return n.runOn(a, "kubelet", nil,
		"--config="+config,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(a.dir, "kubelet"),
		"--cert-dir="+filepath.Join(a.dir, "kubelet-pki"),
		"--hostname-override="+a.name,
		// A loopback node IP is refused: the one node is reached at its
		// pods' bridge's address, each of several at its own.
		"--node-ip="+a.ip,
		"--v=1",
	)
}

// hostProxyName is the node name the host's kube-proxy goes by, among
// several nodes: no Node has it. kube-proxy exits when the Node it names
// is deleted, which a test of a node lost does to any real node; without a
// Node it waits 30 s for one, then goes on with its bind address as the
// node's.
const hostProxyName = "app-operator-host"

// startKubeProxy starts kube-proxy for agent a, on its network; with a
// nil a, on the host's network among several nodes, so that clients on the
// host reach Services as the nodes' pods do.
func (n *realNode) startKubeProxy(a *agent, kubeconfig string, ports realNodePorts) error {
	dir, name, cidr, bind := n.dir, hostProxyName, clusterPodCIDR, n.hostIP
	if a != nil {
		dir, name, cidr, bind = a.dir, a.name, a.podSubnet, "0.0.0.0"
		if len(n.agents) > 1 {
			cidr = clusterPodCIDR
		}
	}
	config := filepath.Join(dir, "kube-proxy.yaml")
	yaml := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
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
`, kubeconfig, name, bind, ports.proxyHealthz, ports.proxyMetrics, cidr)
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return err
	}
	if a == nil {
		return n.run("kube-proxy", "--config="+config, "--v=1")
	}
	return n.runOn(a, "kube-proxy", nil, "--config="+config, "--v=1")
}

// waitRealNodeReady waits until node name is Ready and the default
// ServiceAccount exists (pods are rejected until it does).
func (c *Cluster) waitRealNodeReady(ctx context.Context, name string) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	return c.node.poll(ctx, 2*time.Minute, "node "+name, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					return fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message) //nolint:staticcheck // The condition's name, as the API writes it.
				}
				_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
				return err
			}
		}
		return errors.New("no Ready condition yet")
	})
}
