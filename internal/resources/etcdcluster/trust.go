package etcdcluster

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// TrustAnnotation, on the member pods' template and so on each pod made
// from it, names the CAs the cluster's Secrets held when the pod was made
// (Trust.String). etcd reads its ca.crt files once, at start: a pod whose
// CAs are not the Secrets' runs a member that still trusts those of then.
const TrustAnnotation = "app-operator/tls-ca"

// Trust is the CAs the members trust: those of the peer Secret's ca.crt
// (for peers) and of the server Secret's (for clients). The zero Trust is
// none known.
type Trust struct {
	Peer, Server []CA
}

// CA is one CA of a ca.crt, by two fingerprints (the first 8 bytes of a
// SHA-256, in hex). Cert is that of the certificate: a CA renewed with its
// key is another certificate, which a member loads only when it restarts.
// Key is that of the certificate's subject and public key
// (SubjectPublicKeyInfo): what a certificate it signed names as its issuer
// and is verified with. A CA renewed with its key under its name (the usual
// way to extend its validity) has the Key of the one before, and a
// certificate either signed verifies under the other. Key is empty when
// unknown: a pod annotated before the operator wrote it, or a certificate
// that does not parse.
type CA struct {
	Cert, Key string
}

// TrustOf is the trust of the ca.crt files peerCA and serverCA.
func TrustOf(peerCA, serverCA []byte) Trust {
	return Trust{Peer: casOf(peerCA), Server: casOf(serverCA)}
}

// casOf are the CAs of the certificates of a PEM bundle, by Cert, once
// each.
func casOf(bundle []byte) []CA {
	var out []CA
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		ca := CA{Cert: fingerprint(block.Bytes)}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			ca.Key = fingerprint(cert.RawSubject, cert.RawSubjectPublicKeyInfo)
		}
		out = append(out, ca)
	}
	slices.SortFunc(out, func(a, b CA) int { return strings.Compare(a.Cert, b.Cert) })
	return slices.CompactFunc(out, func(a, b CA) bool { return a.Cert == b.Cert })
}

// fingerprint is the first 8 bytes of the SHA-256 of the parts, in hex.
func fingerprint(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// String is the annotation's value: peer=<CAs>;server=<CAs>, each CA as
// <Cert>:<Key>, comma-separated.
func (t Trust) String() string {
	if t.IsZero() {
		return ""
	}
	return "peer=" + joinCAs(t.Peer) + ";server=" + joinCAs(t.Server)
}

func joinCAs(cas []CA) string {
	s := make([]string, 0, len(cas))
	for _, ca := range cas {
		if ca.Key == "" {
			s = append(s, ca.Cert)
		} else {
			s = append(s, ca.Cert+":"+ca.Key)
		}
	}
	return strings.Join(s, ",")
}

// ParseTrust reads a TrustAnnotation; the zero Trust when it is not one.
// A CA written without its Key (before the operator wrote keys) has none.
func ParseTrust(s string) Trust {
	peer, server, ok := strings.Cut(s, ";")
	peer, okPeer := strings.CutPrefix(peer, "peer=")
	server, okServer := strings.CutPrefix(server, "server=")
	if !ok || !okPeer || !okServer {
		return Trust{}
	}
	split := func(s string) []CA {
		if s == "" {
			return nil
		}
		var out []CA
		for _, e := range strings.Split(s, ",") {
			cert, key, _ := strings.Cut(e, ":")
			out = append(out, CA{Cert: cert, Key: key})
		}
		return out
	}
	return Trust{Peer: split(peer), Server: split(server)}
}

// IsZero reports whether t names no CA.
func (t Trust) IsZero() bool { return len(t.Peer) == 0 && len(t.Server) == 0 }

// Equal reports whether t and u name the same CA certificates: a member
// that started on t has loaded those of u.
func (t Trust) Equal(u Trust) bool {
	same := func(a, b CA) bool { return a.Cert == b.Cert }
	return slices.EqualFunc(t.Peer, u.Peer, same) && slices.EqualFunc(t.Server, u.Server, same)
}

// sameSigner reports whether a and b verify the same certificates: the
// same Key, or, where a Key is unknown, the same certificate.
func sameSigner(a, b CA) bool {
	if a.Key != "" && b.Key != "" {
		return a.Key == b.Key
	}
	return a.Cert == b.Cert
}

// disjoint reports whether the CAs a and b share no signer: no
// certificate one of them verifies is verified by the other.
func disjoint(a, b []CA) bool {
	return !slices.ContainsFunc(a, func(x CA) bool {
		return slices.ContainsFunc(b, func(y CA) bool { return sameSigner(x, y) })
	})
}

// distrusts reports whether pod runs a member that trusts other CAs than
// the Secrets hold now (o.Trust). A pod without the annotation (made
// before the operator wrote it, or without TLS) is taken as current.
func (o Observed) distrusts(pod Pod) bool {
	return !o.Trust.IsZero() && !pod.Trust.IsZero() && !pod.Trust.Equal(o.Trust)
}

// retrust returns the next restart of a healthy cluster whose Secrets
// hold other CAs than its members started with: one member at a time,
// each once every pod is ready, the leader last after handing its
// leadership to a member that trusts the new CAs. false when every member
// trusts them.
//
// A move between CAs keeps every member reaching every other when it
// goes in three changes, each of which reaches the members before the
// next: both CAs in every ca.crt (restarts here), the certificates issued
// from the new CA (read by etcd on each connection, no restart), the old
// CA taken out of ca.crt (restarts here). A CA renewed with its key under
// its name is the same signer: its members restart here too, one at a
// time. A change that shares no signer with the CAs a member started on
// restarts no member while the members reach one another (a member
// restarted on it could not reach the others, or the operator and the
// clients): it is CAReplaced, and replaced restarts the members once they
// show they cannot reach each other.
func retrust(o Observed, members []Member) (Decision, bool) {
	var stale []Member
	var peer, server []string
	for _, m := range members {
		pod := o.Pods[m.Name]
		if !o.distrusts(pod) {
			continue
		}
		stale = append(stale, m)
		switch {
		case disjoint(pod.Trust.Peer, o.Trust.Peer):
			peer = append(peer, m.Name)
		case disjoint(pod.Trust.Server, o.Trust.Server):
			server = append(server, m.Name)
		}
	}
	if len(stale) == 0 {
		return Decision{}, false
	}
	if len(peer)+len(server) > 0 {
		return caReplaced(peer, server), true
	}
	if name, ok := restarting(o, members); ok {
		return Decision{Reason: etcdv1beta2.ReasonRotatingCA, Message: fmt.Sprintf("Member %s is restarting to load the CAs of its Secrets", name)}, true
	}
	m, to := nextToRestart(members, stale, func(m Member) bool { return !o.distrusts(o.Pods[m.Name]) })
	if to != nil {
		return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: etcdv1beta2.ReasonRotatingCA,
			Message: fmt.Sprintf("Moving the leadership from %s to %s before restarting %s to load the CAs of its Secrets", m.Name, to.Name, m.Name)}, true
	}
	return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: o.Pods[m.Name].UID}, Reason: etcdv1beta2.ReasonRotatingCA,
		Message: fmt.Sprintf("Restarting member %s to load the CAs of its Secrets, %d of %d members left", m.Name, len(stale), len(members))}, true
}

// caReplaced says why the members whose peer (or server) CAs share no
// signer with the Secrets' are not restarted while every member is well.
func caReplaced(peer, server []string) Decision {
	var what []string
	if len(peer) > 0 {
		what = append(what, fmt.Sprintf("the peer CAs of members %s share no signer (subject and public key) with the peer Secret's ca.crt: restarted on it, a member could not reach the others",
			strings.Join(peer, ", ")))
	}
	if len(server) > 0 {
		what = append(what, fmt.Sprintf("the server CAs of members %s share no signer with the server Secret's ca.crt: restarted on it, a member would refuse the clients of the old CA",
			strings.Join(server, ", ")))
	}
	return Decision{Reason: etcdv1beta2.ReasonCAReplaced, Failure: true, Message: strings.Join(what, "; ") +
		". The members reach one another, so none is restarted; each restarts once it shows it cannot (its pod not ready, or the operator refused). To move without an outage, put the old CA back beside the new one in ca.crt: the members then restart one at a time"}
}

// replaced returns the restart a change of CA that shares no signer with
// the CAs a member started on needs once that member shows it is cut off;
// false when there is none. It comes before the quorum check: such a
// change may cost the quorum, or cut the operator off from the members.
// While the members reach one another, nothing is restarted (retrust
// says CAReplaced).
//
//   - Peer CAs replaced: a member restarted on the new CAs and one still
//     on the old refuse each other's certificates, so no order keeps the
//     quorum. A member on the old CAs is restarted once it is down: its
//     pod not ready (etcd's /health fails without a leader) and not
//     counted healthy by the operator. Such restarts go one after another
//     without waiting: the cluster is back once a quorum of members runs
//     on the new CAs. A member that still serves is left as it is.
//   - Server CAs alone replaced: the members still reach one another, but
//     refuse the operator's new certificate and every client's. A member
//     that does not answer the operator is restarted, one at a time, each
//     once every member pod is ready (the readiness probe needs no
//     certificate).
func replaced(o Observed) (Decision, bool) {
	if o.Trust.IsZero() {
		return Decision{}, false
	}
	listed := map[string]Member{}
	if o.Reachable {
		for _, m := range o.Members {
			listed[m.Name] = m
		}
	}
	names := make([]string, 0, len(o.Pods))
	for name := range o.Pods {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := o.Pods[a].Ready, o.Pods[b].Ready; ra != rb {
			if rb {
				return -1
			}
			return 1
		}
		return compareNames(o.Cluster, a, b)
	})
	var server []string
	for _, name := range names {
		pod := o.Pods[name]
		switch {
		case pod.Trust.IsZero():
		case disjoint(pod.Trust.Peer, o.Trust.Peer):
			if !pod.Ready && !listed[name].Healthy {
				return Decision{Action: Action{Kind: RestartPod, Member: name, PodUID: pod.UID}, Reason: etcdv1beta2.ReasonRotatingCA, Message: fmt.Sprintf(
					"Restarting member %s, down: its peer CAs share no signer with those of its Secrets, which replaced them at once; a member on the new CAs and one on the old refuse each other, and every member on the old CAs restarts once it is down", name)}, true
			}
		case disjoint(pod.Trust.Server, o.Trust.Server):
			if listed[name].Version == "" {
				server = append(server, name)
			}
		}
	}
	if len(server) == 0 {
		return Decision{}, false
	}
	for _, name := range names {
		if !o.Pods[name].Ready {
			// The planner says what it waits for.
			return Decision{}, false
		}
	}
	name := server[0]
	return Decision{Action: Action{Kind: RestartPod, Member: name, PodUID: o.Pods[name].UID}, Reason: etcdv1beta2.ReasonRotatingCA, Message: fmt.Sprintf(
		"Restarting member %s: its server CAs share no signer with those of its Secrets, which replaced them at once, and it does not answer the operator's certificate of the new ones; %d members left", name, len(server))}, true
}
