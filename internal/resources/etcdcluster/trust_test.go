package etcdcluster

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources"
)

// recorded is the membership status.members records of members.
func recorded(members ...Member) []etcdv1beta2.EtcdMember {
	r := make([]etcdv1beta2.EtcdMember, 0, len(members))
	for _, mem := range members {
		r = append(r, etcdv1beta2.EtcdMember{Name: mem.Name, ID: strconv.FormatUint(mem.ID, 16)})
	}
	return r
}

// trusting returns p with the pod of each member named started when the
// Secrets held the CAs of t.
func trusting(p map[string]Pod, t Trust, members ...string) map[string]Pod {
	for _, name := range members {
		pod := p[name]
		pod.Trust = t
		p[name] = pod
	}
	return p
}

func TestTheMembersRestartToLoadNewCAs(t *testing.T) {
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	down := func(mem Member) Member { return with(mem, func(x *Member) { x.Healthy = false }) }
	secure := func(ms ...Member) []Member {
		for i := range ms {
			ms[i] = at(Secure, ms[i])
		}
		return ms
	}
	notReady := func(p map[string]Pod, names ...string) map[string]Pod {
		for _, name := range names {
			pod := p[name]
			pod.Ready = false
			p[name] = pod
		}
		return p
	}
	three := func() map[string]Pod { return tlsPods(m(0, 1), m(1, 2), m(2, 3)) }
	all := []string{"example-0", "example-1", "example-2"}
	var (
		old    = Trust{Peer: []string{"p1"}, Server: []string{"s1"}}
		both   = Trust{Peer: []string{"p1", "p2"}, Server: []string{"s1"}}
		peer2  = Trust{Peer: []string{"p2"}, Server: []string{"s1"}}
		server = Trust{Peer: []string{"p1"}, Server: []string{"s2"}}
	)
	tests := []struct {
		name      string
		secrets   Trust
		reachable bool
		members   []Member
		pods      map[string]Pod
		want      Action
		reason    string
		message   string
		failure   bool
	}{
		{name: "every pod started with the CAs the Secrets hold: at the spec", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), both, all...)},
		{name: "pods made before the CAs were written on them are taken as current", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: three()},
		{name: "a CA added to ca.crt: a follower restarts first", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), old, all...),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "the next member waits for the pod restarted before it to be ready", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    notReady(trusting(trusting(three(), old, "example-0", "example-2"), both, "example-1"), "example-1"),
			reason:  ReasonRotatingCA, message: "example-1 is restarting"},
		{name: "the leader hands its leadership to a member on the new CAs before it restarts", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    trusting(trusting(three(), both, "example-1", "example-2"), old, "example-0"),
			want:    Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: ReasonRotatingCA},
		{name: "the old CA taken out of ca.crt: the members restart again, one at a time", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), both, all...),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "a cluster of one restarts its only member", secrets: both, reachable: true,
			members: secure(leader(m(0, 1))), pods: trusting(tlsPods(m(0, 1)), old, "example-0"),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA, message: "1 of 1 members left"},
		{name: "an unhealthy member is waited for before a restart that keeps the quorum", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))), pods: notReady(trusting(three(), old, all...), "example-2"),
			reason: ReasonMemberUnhealthy},
		{name: "peer CAs replaced at once: a member on the old ones restarts, though every member is well", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), old, all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA, message: "replaced them at once"},
		{name: "peer CAs replaced at once: a member not ready restarts first, and the next without waiting", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))),
			pods:    notReady(trusting(trusting(three(), peer2, "example-0"), old, "example-1", "example-2"), "example-0", "example-2"),
			want:    Action{Kind: RestartPod, Member: "example-2", PodUID: "uid-example-2"}, reason: ReasonRotatingCA},
		{name: "peer CAs replaced at once: the members restart when none answers the operator", secrets: peer2,
			pods: notReady(trusting(three(), old, all...), all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA},
		{name: "server CAs replaced at once: the members restart one at a time, though none answers the operator", secrets: server,
			pods: trusting(three(), old, all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA, message: "3 members left"},
		{name: "server CAs replaced at once: the next member waits for every pod to be ready", secrets: server,
			pods:   notReady(trusting(trusting(three(), server, "example-0"), old, "example-1", "example-2"), "example-0"),
			reason: ReasonMembersUnreachable, failure: true},
		{name: "no member answering but their pods ready on the CAs the Secrets hold: the operator is cut off, and restarts nothing", secrets: both,
			pods:   trusting(three(), both, all...),
			reason: ReasonMembersUnreachable, failure: true},
		{name: "a quorum lost with every pod on the CAs the Secrets hold is waited out", secrets: both, reachable: true,
			members: secure(m(0, 1), down(m(1, 2)), down(m(2, 3))),
			pods:    notReady(trusting(three(), both, all...), "example-1", "example-2"),
			reason:  ReasonQuorumLost, failure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Observed{Cluster: "example", Reachable: tt.reachable, FromLeader: true, Members: tt.members, Pods: tt.pods, Trust: tt.secrets,
				Recorded: recorded(m(0, 1), m(1, 2), m(2, 3)), Now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
			d := Next(tlsSpec(), ns, o)
			if diff := cmp.Diff(tt.want, d.Action); diff != "" {
				t.Errorf("action (-want +got):\n%s\n%s", diff, d.Message)
			}
			if d.Reason != tt.reason || d.Failure != tt.failure || !strings.Contains(d.Message, tt.message) {
				t.Errorf("decision %s %q (failure %v), want %s with %q (failure %v)", d.Reason, d.Message, d.Failure, tt.reason, tt.message, tt.failure)
			}
		})
	}
}

func TestTrustNamesEachCAOfTheBundles(t *testing.T) {
	now := time.Now()
	pems := make([][]byte, 0, 2)
	for _, name := range []string{"a", "b"} {
		ca, err := pki.NewCA(name, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, ca.PEM)
	}
	a, b := pems[0], pems[1]
	ab, ba := append(append([]byte{}, a...), b...), append(append([]byte{}, b...), a...)
	if got, want := TrustOf(ab, a), TrustOf(ba, a); !got.Equal(want) {
		t.Errorf("the same CAs in another order: %v, want %v", got, want)
	}
	if got := TrustOf(ab, a); len(got.Peer) != 2 || len(got.Server) != 1 {
		t.Errorf("TrustOf(two CAs, one) = %v", got)
	}
	if TrustOf(a, b).Equal(TrustOf(b, a)) {
		t.Error("the peer CAs are not told from the server CAs")
	}
	if !disjoint(TrustOf(a, a).Peer, TrustOf(b, b).Peer) || disjoint(TrustOf(ab, a).Peer, TrustOf(b, b).Peer) {
		t.Error("disjoint does not tell CAs that share none")
	}
	for _, tr := range []Trust{TrustOf(ab, a), TrustOf(a, nil), {}} {
		if got := ParseTrust(tr.String()); !got.Equal(tr) {
			t.Errorf("ParseTrust(%q) = %v, want %v", tr.String(), got, tr)
		}
	}
	for _, s := range []string{"", "0123abcd", "peer=a", "server=b;peer=a"} {
		if got := ParseTrust(s); !got.IsZero() {
			t.Errorf("ParseTrust(%q) = %v, want none", s, got)
		}
	}
}

func TestTheTemplateCarriesTheCAsOnlyWithTLS(t *testing.T) {
	trust := Trust{Peer: []string{"p1", "p2"}, Server: []string{"s1"}}
	for _, tt := range []struct {
		name  string
		tls   bool
		trust Trust
		want  map[string]string
	}{
		{name: "with TLS", tls: true, trust: trust, want: map[string]string{TrustAnnotation: "peer=p1,p2;server=s1"}},
		{name: "with TLS in a preview", tls: true},
		{name: "without TLS", trust: trust},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(3, "3.6.16")
			if tt.tls {
				s = tlsSpec()
			}
			membership := FromStatus("example", recorded(m(0, 1), m(1, 2), m(2, 3)))
			membership.Trust = tt.trust
			owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
			c := Build(owner, s, membership)
			if diff := cmp.Diff(tt.want, c.StatefulSet.Spec.Template.Annotations); diff != "" {
				t.Errorf("template annotations (-want +got):\n%s", diff)
			}
		})
	}
}
