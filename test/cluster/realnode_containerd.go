package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The real node's container runtime: containerd with its registry mirrors,
// its CNI network and its CRI, which the kubelet waits for.

// startContainerd writes containerd's registry mirrors, its CNI network and
// its configuration, starts it, and waits for its CRI to report the runtime
// and the network ready.
func (n *realNode) startContainerd(ctx context.Context, a *agent) error {
	certs, err := writeRegistryMirrors(a, n.registry)
	if err != nil {
		return err
	}
	cniConf, err := writeCNIConfig(a)
	if err != nil {
		return err
	}
	config, err := n.writeContainerdConfig(a, certs, cniConf)
	if err != nil {
		return err
	}
	// containerd finds its shim on PATH.
	env := append(os.Environ(), "PATH="+n.binDir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	if err := n.runOn(a, "containerd", env, "--config="+config); err != nil {
		return err
	}
	return n.poll(ctx, 60*time.Second, "containerd's CRI on "+a.name, func() error {
		return criReady(ctx, a.socket())
	})
}

// writeRegistryMirrors writes containerd's registry configuration (one
// hosts.toml per registry, each naming the local registry) and returns its
// folder.
func writeRegistryMirrors(a *agent, registry string) (string, error) {
	certs := filepath.Join(a.dir, "containerd", "certs.d")
	// Every registry is served by the local one: the samples' (docker.io),
	// the sandbox image's (registry.k8s.io), quay.io, and through _default
	// any other, so that a pull never leaves the machine; an image the
	// local registry lacks fails to pull, as a missing image does anywhere.
	for _, host := range []string{"docker.io", "registry.k8s.io", "quay.io", "_default"} {
		if err := os.MkdirAll(filepath.Join(certs, host), 0o755); err != nil {
			return "", err
		}
		hosts := fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", registry, registry)
		if err := os.WriteFile(filepath.Join(certs, host, "hosts.toml"), []byte(hosts), 0o644); err != nil {
			return "", err
		}
	}
	return certs, nil
}

// writeCNIConfig writes the pods' network configuration (the bridge
// plugin on the node's subnet) and returns its folder.
func writeCNIConfig(a *agent) (string, error) {
	cniConf := filepath.Join(a.dir, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return "", err
	}
	// Pods route their subnet on the bridge and the Services' cluster IPs
	// through the node, where kube-proxy translates them; among several
	// nodes, the other nodes' pods and the nodes' network (the host among
	// them) through the node too; nothing else.
	routes := []string{serviceCIDR}
	if a.netns != "" {
		routes = append(routes, clusterPodCIDR, nodeNetwork)
	}
	var dsts []string
	for _, r := range routes {
		dsts = append(dsts, fmt.Sprintf(`{"dst": %q}`, r))
	}
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
      "routes": [%s],
      "dataDir": %q
    }
  }]
}
`, cniNetworkName, bridgeName, a.podSubnet, a.podGateway, strings.Join(dsts, ", "), filepath.Join(a.dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(cniConf, "10-app-operator.conflist"), []byte(conflist), 0o644); err != nil {
		return "", err
	}
	return cniConf, nil
}

// writeContainerdConfig writes containerd's configuration, with its
// volatile state under the short path, and returns its path.
func (n *realNode) writeContainerdConfig(a *agent, certs, cniConf string) (string, error) {
	root := filepath.Join(a.dir, "containerd", "root")
	config := filepath.Join(a.dir, "containerd.toml")
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
`, root, filepath.Join(a.state, "containerd"), a.socket(), a.socket()+".ttrpc", filepath.Join(a.state, "s"),
		filepath.Join(root, "opt"), certs, cniPluginDir, cniConf,
		filepath.Join(n.binDir, "runc"), filepath.Join(a.state, "runc"))
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		return "", err
	}
	return config, nil
}

// criReady asks the containerd at socket whether its runtime and network
// are ready.
func criReady(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
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
