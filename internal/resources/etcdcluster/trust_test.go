package etcdcluster

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
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

// trusting returns p with the pod of each member named marked as started
// when the Secrets held the CAs of digest.
func trusting(p map[string]Pod, digest string, members ...string) map[string]Pod {
	for _, name := range members {
		pod := p[name]
		pod.Trust = digest
		p[name] = pod
	}
	return p
}

func TestTheMembersRestartOneAtATimeToLoadNewCAs(t *testing.T) {
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
	all := []string{"example-0", "example-1", "example-2"}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	// leaderless is mem up (it answers) without a leader.
	leaderless := func(mem Member) Member { return with(mem, func(x *Member) { x.Healthy = false }) }
	// createdAgo returns p with the pod of name made d before now.
	createdAgo := func(p map[string]Pod, name string, d time.Duration) map[string]Pod {
		pod := p[name]
		pod.Created = now.Add(-d)
		p[name] = pod
		return p
	}
	tests := []struct {
		name      string
		reachable bool
		members   []Member
		pods      map[string]Pod
		want      Action
		reason    string
		message   string
		failure   bool
	}{
		{name: "every pod started with the CAs the Secrets hold: at the spec", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "new", all...)},
		{name: "pods made before the digest was written are taken as current", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: tlsPods(m(0, 1), m(1, 2), m(2, 3))},
		{name: "new CAs in the Secrets: a follower restarts first", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", all...),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "the next member waits for the pod restarted before it to be ready", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    notReady(trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", "example-0", "example-2"), "new", "example-1"), "example-1"),
			reason:  ReasonRotatingCA, message: "example-1 is restarting"},
		{name: "the leader hands its leadership to a member that loaded the new CAs before it restarts", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "new", "example-1", "example-2"), "old", "example-0"),
			want:    Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: ReasonRotatingCA},
		{name: "a cluster of one restarts its only member", reachable: true,
			members: secure(leader(m(0, 1))), pods: trusting(tlsPods(m(0, 1)), "old", "example-0"),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA, message: "1 of 1 members left"},
		{name: "an unhealthy member is waited for before any restart", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))), pods: trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", all...),
			reason: ReasonMemberUnhealthy},
		{name: "members cut off from one another by CAs changed at once restart, not ready, even without a quorum", reachable: true,
			members: secure(m(0, 1), down(m(1, 2)), down(m(2, 3))),
			pods:    notReady(trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "new", "example-0"), "old", "example-1", "example-2"), "example-0", "example-1", "example-2"),
			want:    Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonRotatingCA, message: "keep no quorum"},
		{name: "no member answering the operator, one whose pod is not ready and trusts the old CAs restarts", reachable: false,
			pods: notReady(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", all...), all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: ReasonRotatingCA},
		{name: "no member answering but their pods ready: the operator is cut off, and restarts nothing", reachable: false,
			pods:   trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", all...),
			reason: ReasonMembersUnreachable, failure: true},
		{name: "a member down whose pod trusts the old CAs restarts at once, though the others are not all well", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))),
			pods:    notReady(trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "new", "example-0"), "old", "example-1", "example-2"), "example-2"),
			want:    Action{Kind: RestartPod, Member: "example-2", PodUID: "uid-example-2"}, reason: ReasonRotatingCA, message: "down"},
		{name: "CAs changed at once: a member on the new CAs up without a leader for a minute has the members on the old CAs restarted, a follower first", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), leaderless(m(2, 3))),
			pods: createdAgo(notReady(trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", "example-0", "example-1"), "new", "example-2"), "example-2"),
				"example-2", 2*restartGrace),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonRotatingCA, message: "the CAs changed at once"},
		{name: "a member on the new CAs just restarted is given time to find a leader", reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), leaderless(m(2, 3))),
			pods: createdAgo(notReady(trusting(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "old", "example-0", "example-1"), "new", "example-2"), "example-2"),
				"example-2", 5*time.Second),
			reason: ReasonMemberUnhealthy},
		{name: "a quorum lost with every pod trusting the CAs the Secrets hold is waited out", reachable: true,
			members: secure(m(0, 1), down(m(1, 2)), down(m(2, 3))),
			pods:    notReady(trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "new", all...), "example-1", "example-2"),
			reason:  ReasonQuorumLost, failure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Observed{Cluster: "example", Reachable: tt.reachable, FromLeader: true, Members: tt.members, Pods: tt.pods, Trust: "new",
				Recorded: recorded(m(0, 1), m(1, 2), m(2, 3)), Now: now}
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

func TestTheTemplateCarriesTheDigestOfTheCAsOnlyWithTLS(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tls   bool
		trust string
		want  map[string]string
	}{
		{name: "with TLS and a digest", tls: true, trust: TrustDigest([]byte("peer CA"), []byte("server CA")),
			want: map[string]string{TrustAnnotation: TrustDigest([]byte("peer CA"), []byte("server CA"))}},
		{name: "with TLS in a preview", tls: true},
		{name: "without TLS", trust: "stale"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(3, "3.6.16")
			if tt.tls {
				s = tlsSpec()
			}
			m := FromStatus("example", recorded(m(0, 1), m(1, 2), m(2, 3)))
			m.Trust = tt.trust
			owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
			c := Build(owner, s, m)
			if diff := cmp.Diff(tt.want, c.StatefulSet.Spec.Template.Annotations); diff != "" {
				t.Errorf("template annotations (-want +got):\n%s", diff)
			}
		})
	}
	if TrustDigest([]byte("a"), []byte("bc")) == TrustDigest([]byte("ab"), []byte("c")) {
		t.Error("the digest does not tell the peer CA from the server CA")
	}
}
