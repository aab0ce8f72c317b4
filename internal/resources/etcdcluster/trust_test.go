package etcdcluster

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
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
		p1, p2, s1, s2 = CA{Cert: "p1", Key: "kp1"}, CA{Cert: "p2", Key: "kp2"}, CA{Cert: "s1", Key: "ks1"}, CA{Cert: "s2", Key: "ks2"}
		old            = Trust{Peer: []CA{p1}, Server: []CA{s1}}
		both           = Trust{Peer: []CA{p1, p2}, Server: []CA{s1}}
		peer2          = Trust{Peer: []CA{p2}, Server: []CA{s1}}
		server         = Trust{Peer: []CA{p1}, Server: []CA{s2}}
		// p1 and s1 renewed with their keys under their names.
		renewed = Trust{Peer: []CA{{Cert: "p1-renewed", Key: "kp1"}}, Server: []CA{{Cert: "s1-renewed", Key: "ks1"}}}
		// Pods annotated before the operator wrote the CAs' keys.
		unkeyed = Trust{Peer: []CA{{Cert: "p1"}}, Server: []CA{{Cert: "s1"}}}
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
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "the next member waits for the pod restarted before it to be ready", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    notReady(trusting(trusting(three(), old, "example-0", "example-2"), both, "example-1"), "example-1"),
			reason:  etcdv1beta2.ReasonRotatingCA, message: "example-1 is restarting"},
		{name: "the leader hands its leadership to a member on the new CAs before it restarts", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)),
			pods:    trusting(trusting(three(), both, "example-1", "example-2"), old, "example-0"),
			want:    Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonRotatingCA},
		{name: "the old CA taken out of ca.crt: the members restart again, one at a time", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), both, all...),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "a cluster of one restarts its only member", secrets: both, reachable: true,
			members: secure(leader(m(0, 1))), pods: trusting(tlsPods(m(0, 1)), old, "example-0"),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: etcdv1beta2.ReasonRotatingCA, message: "1 of 1 members left"},
		{name: "an unhealthy member is waited for before a restart that keeps the quorum", secrets: both, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))), pods: notReady(trusting(three(), old, all...), "example-2"),
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "a CA renewed with its key: the members restart one at a time, a follower first", secrets: renewed, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), old, all...),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonRotatingCA, message: "3 of 3 members left"},
		{name: "a CA renewed with its key waits for an unhealthy member", secrets: renewed, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))), pods: notReady(trusting(three(), old, all...), "example-2"),
			reason: etcdv1beta2.ReasonMemberUnhealthy, message: "example-2"},
		{name: "pods annotated before the keys were written, their CAs the Secrets': at the spec", secrets: old, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), unkeyed, all...)},
		{name: "pods annotated before the keys were written, their CAs renewed: nothing restarts while every member is well", secrets: renewed, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), unkeyed, all...),
			reason: etcdv1beta2.ReasonCAReplaced, failure: true, message: "share no signer"},
		// A behaviour changed: a CA replaced at once restarted every
		// member on the old CAs, ~2 s apart, though every member was
		// well (a ca.crt changed before the certificates were issued from
		// it cut off a cluster that was working). It restarts none now
		// while the members reach one another.
		{name: "peer CAs replaced at once while every member is well: none restarts", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), old, all...),
			reason: etcdv1beta2.ReasonCAReplaced, failure: true, message: "peer CAs of members example-0, example-1, example-2 share no signer"},
		{name: "server CAs replaced at once while the operator reaches every member: none restarts", secrets: server, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: trusting(three(), old, all...),
			reason: etcdv1beta2.ReasonCAReplaced, failure: true, message: "server CAs of members example-0, example-1, example-2"},
		{name: "peer CAs replaced at once: a member down on the old ones restarts, beside a quorum that serves", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))), pods: notReady(trusting(three(), old, all...), "example-2"),
			want: Action{Kind: RestartPod, Member: "example-2", PodUID: "uid-example-2"}, reason: etcdv1beta2.ReasonRotatingCA, message: "replaced them at once"},
		{name: "peer CAs replaced at once: a member whose pod is not ready but that the operator counts healthy is not restarted", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), m(2, 3)), pods: notReady(trusting(three(), old, all...), "example-2"),
			reason: etcdv1beta2.ReasonCAReplaced, failure: true},
		{name: "peer CAs replaced at once and the quorum lost: the members restart", secrets: peer2, reachable: true,
			members: secure(m(0, 1), down(m(1, 2)), down(m(2, 3))), pods: notReady(trusting(three(), old, all...), "example-1", "example-2"),
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonRotatingCA},
		{name: "peer CAs replaced at once: a member not ready restarts first, and the next without waiting", secrets: peer2, reachable: true,
			members: secure(leader(m(0, 1)), m(1, 2), down(m(2, 3))),
			pods:    notReady(trusting(trusting(three(), peer2, "example-0"), old, "example-1", "example-2"), "example-0", "example-2"),
			want:    Action{Kind: RestartPod, Member: "example-2", PodUID: "uid-example-2"}, reason: etcdv1beta2.ReasonRotatingCA},
		{name: "peer CAs replaced at once: the members restart when none answers the operator", secrets: peer2,
			pods: notReady(trusting(three(), old, all...), all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: etcdv1beta2.ReasonRotatingCA},
		{name: "server CAs replaced at once: the members restart one at a time, though none answers the operator", secrets: server,
			pods: trusting(three(), old, all...),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: etcdv1beta2.ReasonRotatingCA, message: "3 members left"},
		{name: "server CAs replaced at once: the next member waits for every pod to be ready", secrets: server,
			pods:   notReady(trusting(trusting(three(), server, "example-0"), old, "example-1", "example-2"), "example-0"),
			reason: etcdv1beta2.ReasonMembersUnreachable, failure: true},
		{name: "no member answering but their pods ready on the CAs the Secrets hold: the operator is cut off, and restarts nothing", secrets: both,
			pods:   trusting(three(), both, all...),
			reason: etcdv1beta2.ReasonMembersUnreachable, failure: true},
		{name: "a quorum lost with every pod on the CAs the Secrets hold is waited out", secrets: both, reachable: true,
			members: secure(m(0, 1), down(m(1, 2)), down(m(2, 3))),
			pods:    notReady(trusting(three(), both, all...), "example-1", "example-2"),
			reason:  etcdv1beta2.ReasonQuorumLost, failure: true},
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
	if got, want := ParseTrust("peer=aa,bb;server=cc"), (Trust{Peer: []CA{{Cert: "aa"}, {Cert: "bb"}}, Server: []CA{{Cert: "cc"}}}); !got.Equal(want) || got.Peer[0].Key != "" {
		t.Errorf("an annotation written without keys: %+v, want %+v", got, want)
	}
	for _, s := range []string{"", "0123abcd", "peer=a", "server=b;peer=a"} {
		if got := ParseTrust(s); !got.IsZero() {
			t.Errorf("ParseTrust(%q) = %v, want none", s, got)
		}
	}
}

func TestTheTemplateCarriesTheCAsOnlyWithTLS(t *testing.T) {
	trust := Trust{Peer: []CA{{Cert: "p1", Key: "kp1"}, {Cert: "p2", Key: "kp2"}}, Server: []CA{{Cert: "s1", Key: "ks1"}}}
	for _, tt := range []struct {
		name  string
		tls   bool
		trust Trust
		want  map[string]string
	}{
		{name: "with TLS", tls: true, trust: trust, want: map[string]string{TrustAnnotation: "peer=p1:kp1,p2:kp2;server=s1:ks1"}},
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

// renew returns ca's certificate issued again with its key and name, valid
// for validity from now: how a CA's expiry is extended.
func renew(t *testing.T, ca *pki.CA, now time.Time, validity time.Duration) []byte {
	t.Helper()
	block, _ := pem.Decode(ca.PEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	keyBlock, _ := pem.Decode(ca.KeyPEM)
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := *cert
	tmpl.SerialNumber = big.NewInt(now.UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A CA renewed with its key (leaves verify under either certificate) is
// loaded one member at a time, each once every member is well; a CA that
// shares no key with the one before (a ca.crt changed before the
// certificates) restarts no member of a cluster whose members are all
// well, and the members once they are down.
func TestACARenewedWithItsKeyIsRolledAndANewOneWaitsForTheMembersToBeCutOff(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("etcd-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("etcd-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	renewed := renew(t, ca, now, 24*time.Hour)
	if bytes.Equal(renewed, ca.PEM) {
		t.Fatal("the renewed CA is the same certificate")
	}
	leaf, err := ca.Issue("example-0", []string{"example-0"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(renewed)
	leafBlock, _ := pem.Decode(leaf.Cert)
	leafCert, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leafCert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Fatalf("a certificate of the CA does not verify under the CA renewed: %v", err)
	}

	started := TrustOf(ca.PEM, ca.PEM)
	all := []string{"example-0", "example-1", "example-2"}
	well := func() []Member {
		return []Member{with(at(Secure, m(0, 1)), func(x *Member) { x.Leader = true }), at(Secure, m(1, 2)), at(Secure, m(2, 3))}
	}
	tests := []struct {
		name    string
		secrets Trust
		members []Member
		ready   bool
		want    Action
		reason  string
	}{
		{name: "renewed with its key, every member well: a follower restarts", secrets: TrustOf(renewed, renewed), members: well(), ready: true,
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonRotatingCA},
		{name: "a new CA's ca.crt, every member well: none restarts", secrets: TrustOf(other.PEM, ca.PEM), members: well(), ready: true,
			reason: etcdv1beta2.ReasonCAReplaced},
		{name: "a new CA's ca.crt, no member answering and no pod ready: the members restart", secrets: TrustOf(other.PEM, ca.PEM),
			want: Action{Kind: RestartPod, Member: "example-0", PodUID: "uid-example-0"}, reason: etcdv1beta2.ReasonRotatingCA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := trusting(tlsPods(m(0, 1), m(1, 2), m(2, 3)), started, all...)
			for name, p := range pods {
				p.Ready = tt.ready
				pods[name] = p
			}
			o := Observed{Cluster: "example", Reachable: tt.members != nil, FromLeader: true, Members: tt.members, Pods: pods, Trust: tt.secrets,
				Recorded: recorded(m(0, 1), m(1, 2), m(2, 3)), Now: now}
			d := Next(tlsSpec(), ns, o)
			if d.Action != tt.want || d.Reason != tt.reason {
				t.Errorf("decision %+v %s %q, want %+v %s", d.Action, d.Reason, d.Message, tt.want, tt.reason)
			}
		})
	}
}
