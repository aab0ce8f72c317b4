package etcdcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// at returns mem at stage s: its registered peer URL and the client URLs
// its server advertises.
func at(s Stage, mem Member) Member {
	return with(mem, func(x *Member) { x.PeerTLS, x.Serving = s == Secure, s })
}

// tlsPods returns pods (see pods) that mount the certificates.
func tlsPods(members ...Member) map[string]Pod {
	p := pods(img3616, members...)
	for name, pod := range p {
		pod.TLS = true
		p[name] = pod
	}
	return p
}

// longNotReady returns p with the pod of member not ready since it was
// created twice restartGrace before now.
func longNotReady(p map[string]Pod, member string, now time.Time) map[string]Pod {
	pod := p[member]
	pod.Created, pod.Ready = now.Add(-2*restartGrace), false
	p[member] = pod
	return p
}

func TestARunningClusterMovesToTLSOneMemberAtATime(t *testing.T) {
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	down := func(mem Member) Member { return with(mem, func(x *Member) { x.Healthy, x.Version = false, "" }) }
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		spec    *etcdv1beta2.EtcdClusterSpec
		members []Member
		pods    map[string]Pod
		want    Action
		reason  string
		message string
	}{
		{name: "without spec.TLS a plain cluster is at its spec", spec: spec(3, "3.6.16"),
			members: []Member{leader(m(0, 1)), m(1, 2), m(2, 3)}, pods: pods(img3616, m(0, 1), m(1, 2), m(2, 3))},
		{name: "a follower's pod restarts first, with the certificates mounted", spec: tlsSpec(),
			members: []Member{leader(m(0, 1)), m(1, 2), m(2, 3)}, pods: pods(img3616, m(0, 1), m(1, 2), m(2, 3)),
			want: Action{Kind: RestartPod, Member: "example-1", ID: 2, PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonEnablingTLS, message: "3 of 3 members left"},
		{name: "the next member waits for the pod restarted before it to be ready", spec: tlsSpec(),
			members: []Member{leader(m(0, 1)), at(Dual, m(1, 2)), m(2, 3)},
			pods: func() map[string]Pod {
				p := pods(img3616, m(0, 1), m(2, 3))
				p["example-1"] = Pod{UID: "new", Image: img3616, TLS: true}
				return p
			}(),
			reason: etcdv1beta2.ReasonEnablingTLS, message: "example-1 is restarting"},
		{name: "the leader hands its leadership to a member at Dual before its pod restarts", spec: tlsSpec(),
			members: []Member{leader(m(0, 1)), at(Dual, m(1, 2)), at(Dual, m(2, 3))},
			pods: func() map[string]Pod {
				p := tlsPods(m(1, 2), m(2, 3))
				p["example-0"] = pods(img3616, m(0, 1))["example-0"]
				return p
			}(),
			want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "every member at Dual: a follower's peer URL moves to https", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), at(Dual, m(1, 2)), at(Dual, m(2, 3))}, pods: tlsPods(m(0, 1), m(1, 2), m(2, 3)),
			want:   Action{Kind: SecurePeer, Member: "example-1", ID: 2, PodUID: "uid-example-1", PeerURL: "https://example-1.example.ns.svc:2380"},
			reason: etcdv1beta2.ReasonEnablingTLS, message: "3 of 3 members left"},
		{name: "the leader moves last", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), at(Secure, m(1, 2)), at(Secure, m(2, 3))}, pods: tlsPods(m(0, 1), m(1, 2), m(2, 3)),
			want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "a cluster of one moves its only member", spec: func() *etcdv1beta2.EtcdClusterSpec { s := tlsSpec(); s.Size = 1; return s }(),
			members: []Member{leader(at(Dual, m(0, 1)))}, pods: tlsPods(m(0, 1)),
			want: Action{Kind: SecurePeer, Member: "example-0", ID: 1, PodUID: "uid-example-0", PeerURL: "https://example-0.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "every member at Secure: the cluster is at its spec", spec: tlsSpec(),
			members: []Member{leader(at(Secure, m(0, 1))), at(Secure, m(1, 2)), at(Secure, m(2, 3))}, pods: tlsPods(m(0, 1), m(1, 2), m(2, 3))},
		{name: "no member is added before the move ends", spec: func() *etcdv1beta2.EtcdClusterSpec { s := tlsSpec(); s.Size = 5; return s }(),
			members: []Member{leader(at(Dual, m(0, 1))), at(Dual, m(1, 2)), at(Dual, m(2, 3))}, pods: tlsPods(m(0, 1), m(1, 2), m(2, 3)),
			want: Action{Kind: SecurePeer, Member: "example-1", ID: 2, PodUID: "uid-example-1", PeerURL: "https://example-1.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "a member whose URL moved but whose pod was not restarted is restarted, though no peer reaches it", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), with(at(Dual, m(1, 2)), func(x *Member) { x.PeerTLS, x.Healthy = true, false }), at(Dual, m(2, 3))},
			pods:    longNotReady(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "example-1", now),
			want:    Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "a member just restarted with its URL moved is given time to say so", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), with(at(Dual, m(1, 2)), func(x *Member) { x.PeerTLS, x.Healthy = true, false }), at(Dual, m(2, 3))},
			pods: func() map[string]Pod {
				p := tlsPods(m(0, 1), m(1, 2), m(2, 3))
				p["example-1"] = Pod{UID: "new", Image: img3616, TLS: true, Created: now.Add(-5 * time.Second)}
				return p
			}(),
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "a member whose URL moved but that serves is not restarted beside a member down", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), with(at(Dual, m(1, 2)), func(x *Member) { x.PeerTLS = true }), down(at(Dual, m(2, 3)))},
			pods: func() map[string]Pod {
				p := longNotReady(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "example-2", now)
				pod := p["example-1"]
				pod.Created = now.Add(-2 * restartGrace)
				p["example-1"] = pod
				return p
			}(),
			reason: etcdv1beta2.ReasonMemberUnhealthy, message: "example-2"},
		{name: "a member whose URL moved but that serves is restarted once every other member is well", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), with(at(Dual, m(1, 2)), func(x *Member) { x.PeerTLS = true }), at(Dual, m(2, 3))},
			pods: func() map[string]Pod {
				p := tlsPods(m(0, 1), m(1, 2), m(2, 3))
				pod := p["example-1"]
				pod.Created = now.Add(-2 * restartGrace)
				p["example-1"] = pod
				return p
			}(),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonEnablingTLS},
		{name: "a pod with the certificates whose server started Plain is restarted", spec: tlsSpec(),
			members: []Member{leader(at(Dual, m(0, 1))), with(m(1, 2), func(x *Member) { x.Healthy = false }), at(Dual, m(2, 3))},
			pods:    longNotReady(tlsPods(m(0, 1), m(1, 2), m(2, 3)), "example-1", now),
			want:    Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonEnablingTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Next(tt.spec, ns, Observed{Cluster: "example", Reachable: true, FromLeader: true, Members: tt.members, Pods: tt.pods, Now: now})
			if diff := cmp.Diff(tt.want, d.Action); diff != "" {
				t.Errorf("action (-want +got):\n%s\n%s", diff, d.Message)
			}
			if d.Reason != tt.reason || d.Failure || !strings.Contains(d.Message, tt.message) {
				t.Errorf("decision %s %q (failure %v), want %s with %q", d.Reason, d.Message, d.Failure, tt.reason, tt.message)
			}
		})
	}
}

func TestAMemberAddedToAClusterOnItsWayToTLSReachesEveryPeer(t *testing.T) {
	s := tlsSpec()
	s.Size = 2
	plain := Observed{Cluster: "example", Reachable: true, FromLeader: true, Members: []Member{with(m(0, 1), func(x *Member) { x.Leader = true })}, Pods: pods(img3616, m(0, 1))}
	// A member with its data lost is replaced before the move: the pod of
	// the plain member cannot reach an https peer.
	if got := addScheme(s, plain, plain.Members); got != HTTP {
		t.Errorf("peer URL of a member added beside a Plain member: %s, want http", got)
	}
	dual := Observed{Cluster: "example", Reachable: true, Members: []Member{at(Dual, m(0, 1))}, Pods: tlsPods(m(0, 1))}
	if got := addScheme(s, dual, dual.Members); got != HTTPS {
		t.Errorf("peer URL of a member added beside a member at Dual: %s, want https", got)
	}
}

func TestServingStageReadsTheAdvertisedClientURLs(t *testing.T) {
	const h, s = "http://m.example.ns.svc:2379", "https://m.example.ns.svc:2379"
	for _, tt := range []struct {
		peer, clients []string
		want          Stage
	}{
		{[]string{"http://p"}, []string{h}, Plain},
		{[]string{"http://p"}, []string{h, s}, Dual},
		{[]string{"https://p"}, []string{h, s}, Dual},
		{[]string{"https://p"}, []string{s}, Secure},
		{[]string{"https://p"}, nil, Secure},
		{[]string{"http://p"}, nil, Plain},
	} {
		if got := ServingStage(tt.peer, tt.clients); got != tt.want {
			t.Errorf("ServingStage(%v, %v) = %s, want %s", tt.peer, tt.clients, got, tt.want)
		}
	}
}

func TestStartUpFilesFollowEachMembersStage(t *testing.T) {
	members := []Member{at(Dual, m(0, 1)), m(1, 2), at(Secure, m(2, 3))}
	p := tlsPods(members...)
	plainPod := pods(img3616, m(1, 2))["example-1"]
	p["example-1"] = plainPod
	o := Observed{Cluster: "example", Reachable: true, Members: members, Pods: p}
	for _, tt := range []struct {
		name string
		spec *etcdv1beta2.EtcdClusterSpec
		o    Observed
		live Live
		d    Decision
		want map[string]Stage
	}{
		{name: "without spec.TLS every file is Plain", spec: spec(3, "3.6.16"), o: o,
			want: map[string]Stage{"example-0": Plain, "example-1": Plain, "example-2": Plain}},
		{name: "a pod without the certificates keeps a Plain file", spec: tlsSpec(), o: o,
			want: map[string]Stage{"example-0": Dual, "example-1": Plain, "example-2": Secure}},
		{name: "the pod the step restarts gets a Dual file before it goes", spec: tlsSpec(), o: o,
			d:    Decision{Action: Action{Kind: RestartPod, Member: "example-1", PodUID: plainPod.UID}},
			want: map[string]Stage{"example-0": Dual, "example-1": Dual, "example-2": Secure}},
		{name: "the member whose peer URL the step moves gets a Secure file", spec: tlsSpec(), o: o,
			d:    Decision{Action: Action{Kind: SecurePeer, Member: "example-0", PodUID: p["example-0"].UID}},
			want: map[string]Stage{"example-0": Secure, "example-1": Plain, "example-2": Secure}},
		{name: "a member whose pod is gone gets a Dual file: its pod comes back with the certificates", spec: tlsSpec(),
			o:    Observed{Cluster: "example", Reachable: true, Members: members, Pods: tlsPods(m(0, 1), m(2, 3))},
			want: map[string]Stage{"example-0": Dual, "example-1": Dual, "example-2": Secure}},
		{name: "when no member answers, each file keeps its stage", spec: tlsSpec(),
			o: Observed{Cluster: "example", Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0"}, {Name: "example-1"}}, Pods: map[string]Pod{"example-1": plainPod}},
			live: Live{Files: map[string]string{
				ConfigKey("example-0"): fileAt(t, Secure, "example-0"),
				ConfigKey("example-1"): fileAt(t, Plain, "example-1"),
			}},
			want: map[string]Stage{"example-0": Secure, "example-1": Plain}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stages := ConfigStages(tt.spec, tt.o, tt.live, tt.d)
			got := map[string]Stage{}
			for name := range tt.want {
				got[name] = stages.Of(name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
		})
	}
}

func fileAt(t *testing.T, s Stage, member string) string {
	t.Helper()
	b, err := yaml.Marshal(MemberConfig(Stages{Default: s}, "example", ns, etcdv1beta2.EtcdMember{Name: member, ClaimUID: "c"}, nil, LegacyClusterToken(ns, "example")))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAMemberAtDualServesClientsInBothSchemesAndReachesPeersInEither(t *testing.T) {
	owner := testOwner()
	members := []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-1", ID: "2"}}
	m := FromStatus(owner.Name, members)
	m.Stages = &Stages{Default: Secure, ByMember: map[string]Stage{"example-0": Dual}}
	c := Build(owner, tlsSpec(), m)
	var got Config
	if err := yaml.UnmarshalStrict([]byte(c.ConfigMap.Data[ConfigKey("example-0")]), &got); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Name:                     "example-0",
		DataDir:                  DataDir + "/data",
		ListenClientURLs:         "http://0.0.0.0:2379,https://0.0.0.0:2379",
		ListenPeerURLs:           "http://0.0.0.0:2380",
		AdvertiseClientURLs:      "http://example-0.example.ns.svc:2379,https://example-0.example.ns.svc:2379",
		InitialAdvertisePeerURLs: "http://example-0.example.ns.svc:2380",
		InitialCluster:           "example-0=http://example-0.example.ns.svc:2380",
		InitialClusterState:      ClusterStateExisting,
		InitialClusterToken:      "ns/example/uid",
		ListenMetricsURLs:        "http://0.0.0.0:2381",
		ClientTransportSecurity:  transportSecurity(ServerTLSDir),
		PeerTransportSecurity:    &TransportSecurity{CertFile: PeerTLSDir + "/tls.crt", KeyFile: PeerTLSDir + "/tls.key", TrustedCAFile: PeerTLSDir + "/ca.crt", ClientCertAuth: true, SkipClientSANVerification: true},
		Space:                    SpaceOf(tlsSpec()),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("start-up file at Dual (-want +got):\n%s", diff)
	}
	// A joining member names each registered member at its own URL.
	var joining Config
	if err := yaml.UnmarshalStrict([]byte(c.ConfigMap.Data[ConfigKey("example-1")]), &joining); err != nil {
		t.Fatal(err)
	}
	if want := "example-0=http://example-0.example.ns.svc:2380,example-1=https://example-1.example.ns.svc:2380"; joining.InitialCluster != want {
		t.Errorf("initial-cluster %q, want %q", joining.InitialCluster, want)
	}
}
