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
					return fmt.Errorf("Ready=%s: %s", cond.Status, cond.Message) //nolint:staticcheck // The condition's name, as the API writes it.
				}
				_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
				return err
			}
		}
		return errors.New("no Ready condition yet")
	})
}
