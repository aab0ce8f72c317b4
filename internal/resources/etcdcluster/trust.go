package etcdcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
)

// TrustAnnotation, on the member pods' template and so on each pod made
// from it, names the CAs the cluster's Secrets held when the pod was made
// (Trust.String). etcd reads its ca.crt files once, at start: a pod whose
// CAs are not the Secrets' runs a member that still trusts those of then.
const TrustAnnotation = "app-operator/tls-ca"

// Trust is the CAs the members trust, each by its fingerprint: those of
// the peer Secret's ca.crt (for peers) and of the server Secret's (for
// clients). The zero Trust is none known.
type Trust struct {
	Peer, Server []string
}

// TrustOf is the trust of the ca.crt files peerCA and serverCA.
func TrustOf(peerCA, serverCA []byte) Trust {
	return Trust{Peer: fingerprints(peerCA), Server: fingerprints(serverCA)}
}

// fingerprints are those of the certificates of a PEM bundle, sorted: the
// first 8 bytes of the SHA-256 of each, in hex.
func fingerprints(bundle []byte) []string {
	var out []string
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			sum := sha256.Sum256(block.Bytes)
			out = append(out, hex.EncodeToString(sum[:8]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// String is the annotation's value: peer=<fingerprints>;server=<fingerprints>,
// comma-separated.
func (t Trust) String() string {
	if t.IsZero() {
		return ""
	}
	return "peer=" + strings.Join(t.Peer, ",") + ";server=" + strings.Join(t.Server, ",")
}

// ParseTrust reads a TrustAnnotation; the zero Trust when it is not one.
func ParseTrust(s string) Trust {
	peer, server, ok := strings.Cut(s, ";")
	peer, okPeer := strings.CutPrefix(peer, "peer=")
	server, okServer := strings.CutPrefix(server, "server=")
	if !ok || !okPeer || !okServer {
		return Trust{}
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return Trust{Peer: split(peer), Server: split(server)}
}

// IsZero reports whether t names no CA.
func (t Trust) IsZero() bool { return len(t.Peer) == 0 && len(t.Server) == 0 }

// Equal reports whether t and u name the same CAs.
func (t Trust) Equal(u Trust) bool {
	return slices.Equal(t.Peer, u.Peer) && slices.Equal(t.Server, u.Server)
}

// disjoint reports whether the fingerprints a and b share no CA.
func disjoint(a, b []string) bool {
	return !slices.ContainsFunc(a, func(fp string) bool { return slices.Contains(b, fp) })
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
// CA taken out of ca.crt (restarts here). A change that shares no CA with
// the one before goes through replaced instead.
func retrust(o Observed, members []Member) (Decision, bool) {
	var stale []Member
	for _, m := range members {
		if o.distrusts(o.Pods[m.Name]) {
			stale = append(stale, m)
		}
	}
	if len(stale) == 0 {
		return Decision{}, false
	}
	if name, ok := restarting(o, members); ok {
		return Decision{Reason: ReasonRotatingCA, Message: fmt.Sprintf("Member %s is restarting to load the CAs of its Secrets", name)}, true
	}
	m, to := nextToRestart(members, stale, func(m Member) bool { return !o.distrusts(o.Pods[m.Name]) })
	if to != nil {
		return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: ReasonRotatingCA,
			Message: fmt.Sprintf("Moving the leadership from %s to %s before restarting %s to load the CAs of its Secrets", m.Name, to.Name, m.Name)}, true
	}
	return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: o.Pods[m.Name].UID}, Reason: ReasonRotatingCA,
		Message: fmt.Sprintf("Restarting member %s to load the CAs of its Secrets, %d of %d members left", m.Name, len(stale), len(members))}, true
}

// replaced returns the restarts a change of CA that shares no CA with the
// one before needs, whatever the operator reaches of the members (such a
// change may cut it off from them); false when no pod runs on CAs so
// replaced.
//
//   - Peer CAs replaced: a member restarted on the new CAs and one still
//     on the old refuse each other's certificates, so no order keeps the
//     quorum. Every such member is restarted, one pass after another
//     without waiting, those not ready first: the cluster is back once a
//     quorum of them runs on the new CAs.
//   - Server CAs alone replaced: the members still reach one another, but
//     refuse the operator's new certificate and every client's. They are
//     restarted one at a time, each once every member pod is ready (the
//     readiness probe needs no certificate).
func replaced(o Observed) (Decision, bool) {
	if o.Trust.IsZero() {
		return Decision{}, false
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
			return Decision{Action: Action{Kind: RestartPod, Member: name, PodUID: pod.UID}, Reason: ReasonRotatingCA, Message: fmt.Sprintf(
				"Restarting member %s: its peer CAs share none with those of its Secrets, which replaced them at once; no member keeps the quorum through this, and every member on the old CAs restarts", name)}, true
		case disjoint(pod.Trust.Server, o.Trust.Server):
			server = append(server, name)
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
	return Decision{Action: Action{Kind: RestartPod, Member: name, PodUID: o.Pods[name].UID}, Reason: ReasonRotatingCA, Message: fmt.Sprintf(
		"Restarting member %s: its server CAs share none with those of its Secrets, which replaced them at once, and it refuses the clients of the new ones; %d members left", name, len(server))}, true
}
