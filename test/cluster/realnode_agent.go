package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The RealPods profile's nodes. One node runs on the host's own network,
// its pods on a bridge of the host. Several nodes each run in a network
// namespace of their own, as separate machines would: a veth pair joins
// each to the nodes' bridge on the host, each node has its own address and
// its own pod subnet with its pods' bridge inside its namespace, and every
// node and the host route each subnet to the node that holds it. The
// control plane, the registry, the cluster DNS and metrics-server stay on
// the host, which the nodes reach at the nodes' bridge address.
const (
	nodeBridgeName = "appop-nodes"
	nodeBridgeIP   = "10.89.0.1"
	nodeNetwork    = "10.89.0.0/24"
	nodeNetPrefix  = "appop-node-"
	// clusterPodCIDR holds every node's pod subnet (10.88.<i+1>.0/24 on
	// node i of several).
	clusterPodCIDR = "10.88.0.0/16"
)

// agent is one node: its containerd, kubelet and kube-proxy, the files
// they keep, and where it sits on the network.
type agent struct {
	name string
	// netns is the node's network namespace, under /run/netns; empty for
	// the one node on the host's network.
	netns string
	// ip is the node's address: where the API server reaches its kubelet.
	ip string
	// podSubnet and podGateway are its pods' subnet and its bridge's
	// address in it.
	podSubnet, podGateway string
	// dir holds its files and logs; state its volatile state (sockets,
	// the runtime's state) under a short path.
	dir, state string
	// cgroup is its kubelet's cgroup root, under realNodeCgroup.
	cgroup string
	procs  []*process
}

// newAgents plans n nodes under the node's run folder dir: one on the
// host's network, or n in namespaces of their own.
func newAgents(n int, dir string) []*agent {
	if n <= 1 {
		return []*agent{{
			name: RealNodeName, ip: bridgeIP, podSubnet: podSubnet, podGateway: bridgeIP,
			dir: dir, state: realNodeState, cgroup: realNodeCgroup,
		}}
	}
	agents := make([]*agent, n)
	for i := range agents {
		name := nodeName(n, i)
		agents[i] = &agent{
			name:       name,
			netns:      nodeNetPrefix + strconv.Itoa(i),
			ip:         "10.89.0." + strconv.Itoa(11+i),
			podSubnet:  "10.88." + strconv.Itoa(i+1) + ".0/24",
			podGateway: "10.88." + strconv.Itoa(i+1) + ".1",
			dir:        filepath.Join(dir, "nodes", name),
			state:      filepath.Join(realNodeState, strconv.Itoa(i)),
			cgroup:     realNodeCgroup + "/" + name,
		}
	}
	return agents
}

// nodeName is the name of node i of n.
func nodeName(n, i int) string {
	if n <= 1 {
		return RealNodeName
	}
	return "realnode-" + strconv.Itoa(i)
}

// kubeconfig is the path of the kubeconfig of the node's component.
func (a *agent) kubeconfig(component string) string {
	return filepath.Join(a.dir, component+".kubeconfig")
}

// socket is the address of the node's containerd.
func (a *agent) socket() string { return filepath.Join(a.state, "containerd.sock") }

// command returns the command that runs bin with args on the node's
// network.
func (a *agent) command(bin string, args ...string) (string, []string) {
	if a.netns == "" {
		return bin, args
	}
	return "nsenter", append([]string{"--net=" + filepath.Join("/run/netns", a.netns), "--", bin}, args...)
}

// veth names are limited to 15 bytes: the host's end of node i's pair is
// appop-h<i>, the node's end appop-n<i>.
func (a *agent) vethHost() string { return "appop-h" + strings.TrimPrefix(a.netns, nodeNetPrefix) }
func (a *agent) vethNode() string { return "appop-n" + strings.TrimPrefix(a.netns, nodeNetPrefix) }

func runIP(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// createNodeNetwork creates the nodes' bridge on the host, and for each
// node its namespace, its veth pair and its routes: the host and every
// other node reach a node's pod subnet through the node's address.
func createNodeNetwork(agents []*agent) error {
	if err := runIP("link", "add", nodeBridgeName, "type", "bridge"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"addr", "add", nodeBridgeIP + "/24", "dev", nodeBridgeName},
		{"link", "set", nodeBridgeName, "up"},
	} {
		if err := runIP(args...); err != nil {
			return err
		}
	}
	for _, a := range agents {
		if err := runIP("netns", "add", a.netns); err != nil {
			return err
		}
		steps := [][]string{
			{"link", "add", a.vethHost(), "type", "veth", "peer", "name", a.vethNode()},
			{"link", "set", a.vethNode(), "netns", a.netns},
			{"link", "set", a.vethHost(), "master", nodeBridgeName},
			{"link", "set", a.vethHost(), "up"},
			{"-n", a.netns, "addr", "add", a.ip + "/24", "dev", a.vethNode()},
			{"-n", a.netns, "link", "set", a.vethNode(), "up"},
			{"-n", a.netns, "link", "set", "lo", "up"},
			{"-n", a.netns, "route", "add", "default", "via", nodeBridgeIP},
			{"route", "add", a.podSubnet, "via", a.ip},
		}
		for _, b := range agents {
			if b != a {
				steps = append(steps, []string{"-n", a.netns, "route", "add", b.podSubnet, "via", b.ip})
			}
		}
		for _, args := range steps {
			if err := runIP(args...); err != nil {
				return err
			}
		}
		// The node forwards its pods' traffic, and its pods' bridge
		// passes through its iptables (kube-proxy's Service rules).
		for key, value := range map[string]string{"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"} {
			if out, err := exec.Command("ip", "netns", "exec", a.netns, "sysctl", "-qw", key+"="+value).CombinedOutput(); err != nil {
				return fmt.Errorf("set %s in %s: %v: %s", key, a.netns, err, out)
			}
		}
	}
	return nil
}

// deleteNodeNetwork deletes every node namespace (with its veth pair, its
// bridge and its iptables rules) and the nodes' bridge, whichever run made
// them.
func deleteNodeNetwork() error {
	var errs []error
	namespaces, _ := filepath.Glob("/run/netns/" + nodeNetPrefix + "*")
	for _, ns := range namespaces {
		if err := runIP("netns", "delete", filepath.Base(ns)); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat("/sys/class/net/" + nodeBridgeName); err == nil {
		if err := runIP("link", "delete", nodeBridgeName); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
