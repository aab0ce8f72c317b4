package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The real node's host network: the pods' bridge, and the kubelet's iptables
// chains, which kube-proxy's own cleanup leaves behind.

// createBridge creates the pods' bridge, if it is missing, with the node's
// address, and brings it up.
func createBridge() error {
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err != nil {
		if out, err := exec.Command("ip", "link", "add", bridgeName, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("create bridge %s: %v: %s", bridgeName, err, out)
		}
	}
	for _, args := range [][]string{
		{"addr", "replace", bridgeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// deleteBridge deletes the pods' bridge, if it exists.
func deleteBridge() error {
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			return fmt.Errorf("delete bridge %s: %v: %s", bridgeName, err, out)
		}
	}
	return nil
}

// The chains the kubelet creates for other components (kube-proxy --cleanup
// leaves them): table, chain.
var kubeletChains = [][2]string{
	{"filter", "KUBE-FIREWALL"},
	{"filter", "KUBE-KUBELET-CANARY"},
	{"nat", "KUBE-KUBELET-CANARY"},
	{"mangle", "KUBE-KUBELET-CANARY"},
	{"mangle", "KUBE-IPTABLES-HINT"},
}

// removeKubeletChains deletes the kubelet's chains and every rule that
// jumps to them, for IPv4 and IPv6.
func removeKubeletChains() error {
	var errs []error
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, tc := range kubeletChains {
			table, chain := tc[0], tc[1]
			out, err := exec.Command(ipt, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			exists := false
			for _, line := range strings.Split(string(out), "\n") {
				args := splitRule(line)
				if len(args) >= 2 && args[0] == "-N" && args[1] == chain {
					exists = true
				}
				if len(args) < 2 || args[0] != "-A" || args[1] == chain || !slicesContainsPair(args, "-j", chain) {
					continue
				}
				args[0] = "-D"
				if o, err := exec.Command(ipt, append([]string{"-w", "-t", table}, args...)...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s: %v: %s", ipt, table, strings.Join(args, " "), err, o))
				}
			}
			if !exists {
				continue
			}
			for _, op := range []string{"-F", "-X"} {
				if o, err := exec.Command(ipt, "-w", "-t", table, op, chain).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s %s: %v: %s", ipt, table, op, chain, err, o))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func slicesContainsPair(args []string, a, b string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == a && args[i+1] == b {
			return true
		}
	}
	return false
}

// splitRule splits a line of `iptables -S` into arguments; comments are
// double-quoted.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, has := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && inQuote && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case ch == '"':
			inQuote, has = !inQuote, true
		case ch == ' ' && !inQuote:
			if has || cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if has || cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// removeKubeProxyChains removes every KUBE-* chain of the filter, nat and
// mangle tables, and the rules that jump to them: what `kube-proxy
// --cleanup` removes, for a node whose kube-proxy cannot run it (a run
// killed, and its binaries deleted with its clone).
func removeKubeProxyChains() error {
	var errs []error
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := exec.Command(ipt, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			var chains []string
			var jumps [][]string
			for _, line := range strings.Split(string(out), "\n") {
				args := splitRule(line)
				switch {
				case len(args) >= 2 && args[0] == "-N" && strings.HasPrefix(args[1], "KUBE-"):
					chains = append(chains, args[1])
				case len(args) >= 2 && args[0] == "-A" && !strings.HasPrefix(args[1], "KUBE-") && jumpsToKube(args):
					jumps = append(jumps, append([]string{"-D"}, args[1:]...))
				}
			}
			run := func(args ...string) {
				if o, err := exec.Command(ipt, append([]string{"-w", "-t", table}, args...)...).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s: %v: %s", ipt, table, strings.Join(args, " "), err, o))
				}
			}
			for _, j := range jumps {
				run(j...)
			}
			// Flushed first, all of them: the chains jump to one another.
			for _, c := range chains {
				run("-F", c)
			}
			for _, c := range chains {
				run("-X", c)
			}
		}
	}
	return errors.Join(errs...)
}

// jumpsToKube reports whether the rule args jumps to a KUBE-* chain.
func jumpsToKube(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-j" && strings.HasPrefix(args[i+1], "KUBE-") {
			return true
		}
	}
	return false
}
