package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Faults of whole nodes, among several: a node that dies and comes back,
// and a node cut off from the others' pods.

// partitionChain holds the rules that cut a node's pods off from the other
// nodes' pods, in the node's own iptables.
const partitionChain = "APPOP-PARTITION"

// agentNamed returns node name among several.
func (c *Cluster) agentNamed(name string) (*agent, error) {
	if c.node == nil || len(c.node.agents) < 2 {
		return nil, errors.New("node faults need a cluster of several real nodes (Options.Nodes)")
	}
	for _, a := range c.node.agents {
		if a.name == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("no real node %q", name)
}

// StopNode stops node name as a machine that dies does: its network goes
// (its end of the nodes' bridge is down, so nothing reaches it or its
// pods), and its kubelet, kube-proxy, containerd and every container are
// killed. Its Node object stays, and turns NotReady once the node
// controller misses its heartbeats; its folders (its pods' volumes) stay
// for StartNode.
func (c *Cluster) StopNode(name string) error {
	a, err := c.agentNamed(name)
	if err != nil {
		return err
	}
	if err := runIP("link", "set", a.vethHost(), "down"); err != nil {
		return err
	}
	for _, p := range a.procs {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	a.procs = nil
	killShimsOf(a.socket())
	killCgroupProcesses(a.cgroup)
	return nil
}

// StartNode starts node name again after StopNode, on the files it kept:
// its network comes back, then containerd, the kubelet (which registers
// its Node again if it was deleted meanwhile) and kube-proxy, and it
// returns once the node is Ready.
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	a, err := c.agentNamed(name)
	if err != nil {
		return err
	}
	n := c.node
	if err := runIP("link", "set", a.vethHost(), "up"); err != nil {
		return err
	}
	if err := n.startContainerd(ctx, a); err != nil {
		return err
	}
	if err := n.startKubelet(a, a.kubeconfig("kubelet"), n.caCert, n.ports); err != nil {
		return err
	}
	if err := n.startKubeProxy(a, a.kubeconfig("kube-proxy"), n.ports); err != nil {
		return err
	}
	return c.waitRealNodeReady(ctx, a.name)
}

// PartitionNode cuts the pods of node name off from every other node's
// pods, both ways, while the host (the control plane, the operator, the
// tests' clients) still reaches them all; heal undoes it.
func (c *Cluster) PartitionNode(name string) (heal func() error, err error) {
	a, err := c.agentNamed(name)
	if err != nil {
		return nil, err
	}
	rules := [][]string{{"-N", partitionChain}, {"-I", "FORWARD", "1", "-j", partitionChain}}
	for _, b := range c.node.agents {
		if b != a {
			rules = append(rules,
				[]string{"-A", partitionChain, "-s", b.podSubnet, "-j", "DROP"},
				[]string{"-A", partitionChain, "-d", b.podSubnet, "-j", "DROP"})
		}
	}
	for _, r := range rules {
		if err := a.iptables(r...); err != nil {
			return nil, err
		}
	}
	return func() error {
		return errors.Join(
			a.iptables("-D", "FORWARD", "-j", partitionChain),
			a.iptables("-F", partitionChain),
			a.iptables("-X", partitionChain))
	}, nil
}

// NodePodSubnet returns the pod subnet of node name, among several: the
// addresses its pods get.
func (c *Cluster) NodePodSubnet(name string) (string, error) {
	a, err := c.agentNamed(name)
	if err != nil {
		return "", err
	}
	return a.podSubnet, nil
}

// iptables runs iptables with args in the node's network namespace.
func (a *agent) iptables(args ...string) error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", a.netns, "iptables", "-w"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s on %s: %v: %s", strings.Join(args, " "), a.name, err, out)
	}
	return nil
}

// killShimsOf kills the runc shims of the containerd at socket, and waits
// a moment for them to go.
func killShimsOf(socket string) {
	for _, pid := range shimPids(func(arg string) bool { return arg == socket }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(100 * time.Millisecond)
}
