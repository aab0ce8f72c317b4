package etcdcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// TrustAnnotation, on the member pods' template and so on each pod made
// from it, is the digest (TrustDigest) of the CA certificates the
// cluster's Secrets held when the pod was made. etcd reads its ca.crt
// files once, at start: a pod whose digest is not the Secrets' digest
// runs a member that still trusts the CAs of then.
const TrustAnnotation = "app-operator/tls-ca"

// TrustDigest is the digest of the CA certificates the members trust: the
// peer Secret's ca.crt (for peers) and the server Secret's (for clients).
func TrustDigest(peerCA, serverCA []byte) string {
	h := sha256.New()
	h.Write(peerCA)
	h.Write([]byte{0})
	h.Write(serverCA)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// distrusts reports whether pod runs a member that trusts other CAs than
// the Secrets hold now (o.Trust). A pod without the annotation (made
// before the operator wrote it, or without TLS) is taken as current.
func (o Observed) distrusts(pod Pod) bool {
	return o.Trust != "" && pod.Trust != "" && pod.Trust != o.Trust
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
// CA taken out of ca.crt (restarts here).
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
	for _, m := range members {
		if pod, ok := o.Pods[m.Name]; !ok || !pod.Ready {
			return Decision{Reason: ReasonRotatingCA, Message: fmt.Sprintf("Member %s is restarting to load the CAs of its Secrets", m.Name)}, true
		}
	}
	// The leader last: one election, not one per member.
	i := slices.IndexFunc(stale, func(m Member) bool { return !m.Leader })
	if i < 0 {
		if len(members) > 1 {
			to := successor(members, func(m Member) bool { return !o.distrusts(o.Pods[m.Name]) })
			return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: ReasonRotatingCA,
				Message: fmt.Sprintf("Moving the leadership from %s to %s before restarting %s to load the CAs of its Secrets", stale[0].Name, to.Name, stale[0].Name)}, true
		}
		i = 0
	}
	m := stale[i]
	return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: o.Pods[m.Name].UID}, Reason: ReasonRotatingCA,
		Message: fmt.Sprintf("Restarting member %s to load the CAs of its Secrets, %d of %d members left", m.Name, len(stale), len(members))}, true
}

// cutOffByTrust returns, while the quorum holds, the restart that lets a
// change of CA made at once go on; false when there is none. Such a change
// cuts a member restarted on the new CAs off from the members that still
// trust only the old ones (each refuses the other's certificate), while
// those keep their quorum over the connections they opened before. So:
//
//   - a member that is down and whose pod, not ready, trusts the old CAs
//     is restarted: it holds no quorum the others need;
//   - when a member on the new CAs has been up without a leader for
//     restartGrace, the members on the old CAs are restarted, one at a
//     time, the leader last: the first takes the quorum away until it has
//     joined the member cut off, on the new CAs; the last, cut off in
//     turn, is restarted as a member down.
//
// A member restarted on CAs that still take its peers' certificates finds
// a leader within seconds, and none of this applies.
func cutOffByTrust(o Observed, members []Member) (Decision, bool) {
	var cutOff string
	var old []Member
	for _, m := range members {
		pod, ok := o.Pods[m.Name]
		switch {
		case !ok:
		case !m.Healthy && !pod.Ready && o.distrusts(pod):
			return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: pod.UID}, Reason: ReasonRotatingCA,
				Message: fmt.Sprintf("Restarting member %s, down, whose pod started with other CAs than its Secrets hold, to load them", m.Name)}, true
		case o.distrusts(pod):
			old = append(old, m)
		case !m.Healthy && m.Version != "" && o.Trust != "" && pod.Trust == o.Trust &&
			!o.Now.IsZero() && !pod.Created.IsZero() && o.Now.Sub(pod.Created) >= restartGrace:
			cutOff = m.Name
		}
	}
	if cutOff == "" || len(old) == 0 {
		return Decision{}, false
	}
	i := slices.IndexFunc(old, func(m Member) bool { return !m.Leader })
	if i < 0 {
		i = 0
	}
	m := old[i]
	return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: o.Pods[m.Name].UID}, Reason: ReasonRotatingCA,
		Message: fmt.Sprintf("Member %s, on the CAs its Secrets hold, has been up without a leader for %s: the CAs changed at once, and the members on the old ones refuse it. Restarting member %s to load them (the quorum is lost until it joins %s)",
			cutOff, restartGrace, m.Name, cutOff)}, true
}

// distrusted returns, when the members do not keep a quorum, the restart
// of the pod of a member that is not ready and trusts other CAs than the
// Secrets hold: a change of CA made at once (not through both CAs in
// ca.crt) cuts such members off from one another, and only a restart lets
// them read the new CA. A ready pod serves, and is left alone. names are
// the members in the order to restart them; false when there is none.
func distrusted(o Observed, names []string) (Decision, bool) {
	for _, name := range names {
		if pod, ok := o.Pods[name]; ok && !pod.Ready && o.distrusts(pod) {
			return Decision{Action: Action{Kind: RestartPod, Member: name, PodUID: pod.UID}, Reason: ReasonRotatingCA,
				Message: fmt.Sprintf("The members keep no quorum, and the pod of %s started with other CAs than its Secrets hold: restarting it to load them", name)}, true
		}
	}
	return Decision{}, false
}
