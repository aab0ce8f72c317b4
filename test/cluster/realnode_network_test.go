package cluster

import (
	"slices"
	"testing"
)

// The teardown deletes the kubelet's jumps by replaying `iptables -S` lines
// with -D: a quoted comment must stay one argument.
func TestSplitRuleKeepsQuotedCommentsWhole(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`-A INPUT -j KUBE-FIREWALL`, []string{"-A", "INPUT", "-j", "KUBE-FIREWALL"}},
		{
			`-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`,
			[]string{"-A", "KUBE-FIREWALL", "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8", "-m", "comment", "--comment",
				"block incoming localnet connections", "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED,DNAT", "-j", "DROP"},
		},
		{`-A OUTPUT -m comment --comment "say \"hi\"" -j X`, []string{"-A", "OUTPUT", "-m", "comment", "--comment", `say "hi"`, "-j", "X"}},
		{`-A OUTPUT -m comment --comment "" -j X`, []string{"-A", "OUTPUT", "-m", "comment", "--comment", "", "-j", "X"}},
	} {
		if got := splitRule(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("splitRule(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	if !slicesContainsPair(splitRule(`-A INPUT -j KUBE-FIREWALL`), "-j", "KUBE-FIREWALL") {
		t.Error("the jump to KUBE-FIREWALL is not found")
	}
	if slicesContainsPair(splitRule(`-A INPUT -m comment --comment "-j KUBE-FIREWALL" -j ACCEPT`), "-j", "KUBE-FIREWALL") {
		t.Error("a comment naming the chain is taken for a jump")
	}
}
