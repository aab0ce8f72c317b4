package etcdcluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Stage is how far a member has moved to TLS. A cluster created with
// spec.TLS starts at Secure. One that gets spec.TLS while it runs moves
// every member, one at a time, to Dual, then every member, one at a time,
// to Secure: a member at Dual reaches its peers in either scheme, so at
// every point each member reaches every other, and the quorum holds
// through each restart.
type Stage int

const (
	// Plain: http peers and clients, no certificate mounted.
	Plain Stage = iota
	// Dual: the certificates mounted; clients served in http and https on
	// the client port, the peer URL still http, and the peer certificate
	// presented to peers at Secure.
	Dual
	// Secure: https peers and clients alone.
	Secure
)

func (s Stage) String() string {
	return [...]string{"Plain", "Dual", "Secure"}[s]
}

// peerScheme is the scheme of the peer URL of a member at s.
func (s Stage) peerScheme() Scheme {
	if s == Secure {
		return HTTPS
	}
	return HTTP
}

// StageOf is the stage of a member whose URLs are all of scheme s.
func StageOf(s Scheme) Stage {
	if s == HTTPS {
		return Secure
	}
	return Plain
}

// Stages are the stages of the members' start-up files.
type Stages struct {
	// Default is the stage of a member not in ByMember.
	Default  Stage
	ByMember map[string]Stage
}

// Of is the stage of member's start-up file.
func (s Stages) Of(member string) Stage {
	if st, ok := s.ByMember[member]; ok {
		return st
	}
	return s.Default
}

// ServingStage is the stage a member's server runs at, read from the
// client URLs it advertised when it last started, and its registered
// peer URLs: a member that has not started yet is at the stage of its
// peer URL.
func ServingStage(peerURLs, clientURLs []string) Stage {
	var plain, secure bool
	for _, u := range clientURLs {
		switch {
		case strings.HasPrefix(u, string(HTTPS)+"://"):
			secure = true
		case strings.HasPrefix(u, string(HTTP)+"://"):
			plain = true
		}
	}
	switch {
	case secure && plain:
		return Dual
	case secure:
		return Secure
	case plain:
		return Plain
	}
	return StageOf(peerScheme(peerURLs))
}

// peerScheme is https when every peer URL is; http otherwise.
func peerScheme(urls []string) Scheme {
	if len(urls) > 0 && !slices.ContainsFunc(urls, func(u string) bool { return !strings.HasPrefix(u, string(HTTPS)+"://") }) {
		return HTTPS
	}
	return HTTP
}

// PeerTLS reports whether a member's registered peer URLs are all https.
func PeerTLS(peerURLs []string) bool { return peerScheme(peerURLs) == HTTPS }

// fileStage is the stage of a start-up file as the live ConfigMap holds
// it; false when it cannot be read.
func fileStage(file string) (Stage, bool) {
	var c Config
	if err := yaml.Unmarshal([]byte(file), &c); err != nil || c.ListenPeerURLs == "" {
		return Plain, false
	}
	switch {
	case strings.HasPrefix(c.ListenPeerURLs, string(HTTPS)+"://"):
		return Secure, true
	case c.ClientTransportSecurity != nil:
		return Dual, true
	}
	return Plain, true
}

// ConfigStages returns the stage of each member's start-up file, the
// step d about to be taken. Without spec.TLS every member is Plain. With
// it, a member is at the stage of its registered peer URL (when no member
// answers, at that of its live file; a member with neither, a seed, at
// Secure), raised to Dual once its pod mounts the certificates, or is to
// be made from the template that does (no pod, or d deletes it), and to
// Secure when d moves its peer URL to https. A pod without the
// certificates never gets a file that needs them.
func ConfigStages(spec *etcdv1beta2.EtcdClusterSpec, o Observed, live Live, d Decision) Stages {
	if !spec.TLSEnabled() {
		return Stages{Default: Plain}
	}
	stages := Stages{Default: Secure, ByMember: map[string]Stage{}}
	if o.Reachable {
		for _, m := range o.Members {
			stages.ByMember[m.Name] = Plain
			if m.PeerTLS {
				stages.ByMember[m.Name] = Secure
			}
		}
	} else {
		for _, r := range o.Recorded {
			if st, ok := fileStage(live.Files[ConfigKey(r.Name)]); ok {
				stages.ByMember[r.Name] = st
			}
		}
	}
	for name, st := range stages.ByMember {
		pod, ok := o.Pods[name]
		if st == Plain && (!ok || pod.TLS || d.Action.deletesPod(pod.UID)) {
			stages.ByMember[name] = Dual
		}
	}
	if d.Action.Kind == SecurePeer {
		stages.ByMember[d.Action.Member] = Secure
	}
	return stages
}

// deletesPod reports whether the action deletes the pod of uid.
func (a Action) deletesPod(uid string) bool {
	switch a.Kind {
	case RestartPod, ReplaceVolume, SecurePeer:
		return uid != "" && a.PodUID == uid
	}
	return false
}

// restartGrace is how long a member's pod may run with a server at a
// stage behind its registration before it is restarted again: long
// enough for a restarted member to start and say so (etcd publishes a
// member's client URLs as it joins).
const restartGrace = time.Minute

// staleServer returns the restart of a member whose server started before
// its stage moved, once its pod has run for restartGrace: a member whose
// peer URL is https while its server listens in http (its pod was not
// deleted after the URL moved), whom no peer dials; or one whose pod
// mounts the certificates while its server runs Plain (it started before
// its file moved), which does not serve the probe of its pod. A member
// that is down (not counted healthy, its pod not ready) holds no quorum
// (the planner checked the others keep one) and is restarted at once. One
// that still serves may count for the quorum (a member whose peers cannot
// dial it still reaches them, and its answers reach the leader): it is
// restarted as any member is, only with every other member healthy and
// every other pod ready. false when there is none.
func staleServer(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) (Decision, bool) {
	if !spec.TLSEnabled() {
		return Decision{}, false
	}
	for _, m := range members {
		pod, ok := o.Pods[m.Name]
		if !ok || !m.Started || o.Now.IsZero() || pod.Created.IsZero() || o.Now.Sub(pod.Created) < restartGrace {
			continue
		}
		if behind := (m.PeerTLS && m.Serving != Secure) || (pod.TLS && m.Serving == Plain); !behind {
			continue
		}
		if (m.Healthy || pod.Ready) && !othersWell(o, members, m.Name) {
			continue
		}
		return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: pod.UID}, Reason: etcdv1beta2.ReasonEnablingTLS,
			Message: fmt.Sprintf("Restarting member %s: its server runs at %s, behind its stage", m.Name, m.Serving)}, true
	}
	return Decision{}, false
}

// othersWell reports whether every member but the one named except is
// started and healthy, and its pod ready.
func othersWell(o Observed, members []Member, except string) bool {
	for _, m := range members {
		if m.Name == except {
			continue
		}
		if pod, ok := o.Pods[m.Name]; !ok || !pod.Ready || !m.Healthy || !m.Started {
			return false
		}
	}
	return true
}

// secure returns the next step of a running cluster that spec.TLS moves
// to TLS, every member healthy: first each member's pod restarted with
// the certificates mounted (to Dual), then each member's peer URL moved
// to https and its pod restarted (to Secure). One member at a time, each
// once the pod restarted before it is ready again; the leader last, after
// handing its leadership to a member already moved. false when every
// member is at Secure.
func secure(spec *etcdv1beta2.EtcdClusterSpec, namespace string, o Observed, members []Member) (Decision, bool) {
	if !spec.TLSEnabled() {
		return Decision{}, false
	}
	var toDual, toSecure []Member
	for _, m := range members {
		pod := o.Pods[m.Name]
		switch {
		case !pod.TLS || m.Serving == Plain:
			toDual = append(toDual, m)
		case !m.PeerTLS || m.Serving != Secure:
			toSecure = append(toSecure, m)
		}
	}
	if len(toDual)+len(toSecure) == 0 {
		return Decision{}, false
	}
	if name, ok := restarting(o, members); ok {
		return Decision{Reason: etcdv1beta2.ReasonEnablingTLS, Message: fmt.Sprintf("Member %s is restarting on the way to TLS", name)}, true
	}
	next, kind, moved := toDual, RestartPod, func(m Member) bool { return o.Pods[m.Name].TLS && m.Serving != Plain }
	what := "with its certificates mounted (clients in http and https, peers in http)"
	if len(toDual) == 0 {
		next, kind, moved = toSecure, SecurePeer, func(m Member) bool { return m.PeerTLS && m.Serving == Secure }
		what = "with its peer URL moved to https (clients and peers in https alone)"
	}
	m, to := nextToRestart(members, next, moved)
	if to != nil {
		return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: etcdv1beta2.ReasonEnablingTLS,
			Message: fmt.Sprintf("Moving the leadership from %s to %s before moving %s to TLS", m.Name, to.Name, m.Name)}, true
	}
	a := Action{Kind: kind, Member: m.Name, ID: m.ID, PodUID: o.Pods[m.Name].UID}
	if kind == SecurePeer {
		a.PeerURL = PeerURL(HTTPS, o.Cluster, namespace, m.Name)
	}
	return Decision{Action: a, Reason: etcdv1beta2.ReasonEnablingTLS,
		Message: fmt.Sprintf("Restarting member %s %s, %d of %d members left", m.Name, what, len(next), len(members))}, true
}

// addScheme is the scheme of the peer URL of a member added: https once
// every member reaches https peers (each at Dual or Secure), http before.
func addScheme(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) Scheme {
	if !spec.TLSEnabled() {
		return HTTP
	}
	for _, m := range members {
		if !o.Pods[m.Name].TLS || m.Serving == Plain {
			return HTTP
		}
	}
	return HTTPS
}
