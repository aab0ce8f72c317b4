package etcdcluster

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// bytesReader hands out the fuzz input a byte at a time, zeros once spent.
type bytesReader []byte

func (b *bytesReader) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

// fuzzTrusts are the CAs a member pod may have started with: the
// Secrets' (the first, repeated so that most pods are on them), both of a
// move, old ones replaced at once (peer, server), the Secrets' before
// they were renewed with their keys, the Secrets' written without keys,
// or none written.
var fuzzTrusts = []Trust{
	{Peer: []CA{fuzzP2}, Server: []CA{fuzzS2}},
	{Peer: []CA{{Cert: "p1", Key: "kp1"}, fuzzP2}, Server: []CA{fuzzS2}},
	{Peer: []CA{{Cert: "p1", Key: "kp1"}}, Server: []CA{fuzzS2}},
	{Peer: []CA{fuzzP2}, Server: []CA{{Cert: "s1", Key: "ks1"}}},
	{},
	{Peer: []CA{{Cert: "p2-before", Key: "kp2"}}, Server: []CA{{Cert: "s2-before", Key: "ks2"}}},
	{Peer: []CA{{Cert: "p2"}}, Server: []CA{{Cert: "s2"}}},
	{Peer: []CA{fuzzP2}, Server: []CA{fuzzS2}},
}

var fuzzP2, fuzzS2 = CA{Cert: "p2", Key: "kp2"}, CA{Cert: "s2", Key: "ks2"}

var fuzzVersions = []string{"3.3.25", "3.5.21", "3.6.15", "3.6.16", "3.7.0", "3.8.0", ""}

// observedFrom builds a spec and an observed cluster of up to 9 members
// from data: membership, learners, health, leadership, versions, pods,
// their claims, crash loops and recorded claim uids all vary.
func observedFrom(data []byte) (*etcdv1beta2.EtcdClusterSpec, Observed) {
	r := bytesReader(data)
	spec := &etcdv1beta2.EtcdClusterSpec{Size: int32(r.next()%9) + 1, Version: fuzzVersions[int(r.next())%(len(fuzzVersions)-1)]}
	o := Observed{Cluster: "example", Reachable: r.next()%8 != 0, Pods: map[string]Pod{}, Now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	n := int(r.next() % 10)
	leader := int(r.next() % 12)
	used := map[int]bool{}
	for i := range n {
		flags := r.next()
		// Names are unique: etcd names a member after its pod.
		ordinal := int(r.next() % 10)
		for used[ordinal] {
			ordinal = (ordinal + 1) % 10
		}
		used[ordinal] = true
		mem := Member{ID: uint64(i + 1), Name: MemberName("example", ordinal), Started: flags&1 == 0, Learner: flags&2 != 0,
			Healthy: flags&4 == 0, Leader: i == leader, Version: fuzzVersions[int(r.next())%len(fuzzVersions)]}
		// The member's way to TLS: its peer URL, its server's stage, its
		// pod's certificates and age.
		tls := r.next()
		mem.PeerTLS, mem.Serving = tls&1 != 0, Stage((tls>>1)%3)
		if o.Reachable {
			o.Members = append(o.Members, mem)
		}
		if flags&8 == 0 {
			pod := Pod{UID: "pod-" + strconv.Itoa(i), ClaimUID: claimUID(flags >> 6), CrashLooping: flags&32 != 0, Ready: flags&64 == 0,
				Image: "quay.io/coreos/etcd:v" + fuzzVersions[int(r.next())%len(fuzzVersions)], TLS: tls&8 != 0, Created: o.Now.Add(-5 * time.Second)}
			if tls&16 != 0 {
				pod.Created = o.Now.Add(-2 * restartGrace)
			}
			// The CAs the member started with: those the Secrets hold,
			// older ones, or none written.
			pod.Trust = fuzzTrusts[int(tls>>5)%len(fuzzTrusts)]
			o.Pods[mem.Name] = pod
		}
		// When the member was added, and its claim made: none recorded,
		// a minute ago, or the join timeout ago; the claim before or after.
		times := r.next()
		if pod, ok := o.Pods[mem.Name]; ok && pod.ClaimUID != "" {
			pod.ClaimCreated = o.Now.Add(-time.Duration(times>>2%4) * 2 * time.Minute)
			o.Pods[mem.Name] = pod
		}
		if flags&16 == 0 {
			rec := etcdv1beta2.EtcdMember{Name: mem.Name, ID: strconv.FormatUint(mem.ID, 16), ClaimUID: claimUID((flags >> 6) & 1)}
			switch times % 4 {
			case 1:
				rec.AddedAt = &metav1.Time{Time: o.Now.Add(-time.Minute)}
			case 2:
				rec.AddedAt = &metav1.Time{Time: o.Now.Add(-DefaultJoinTimeout)}
			}
			o.Recorded = append(o.Recorded, rec)
		}
	}
	if r.next()%2 == 1 {
		spec.TLS = &etcdv1beta2.TLSPolicy{}
		o.Trust = fuzzTrusts[0]
	}
	upkeepFrom(&r, &o)
	return spec, o
}

// upkeepFrom fills, from the bytes past those of observedFrom (so that
// older inputs keep their meaning), each member's database, revision and
// NOSPACE alarm, when each was last defragmented, and the NOSPACE remedy
// recorded.
func upkeepFrom(r *bytesReader, o *Observed) {
	for i := range o.Members {
		b := r.next()
		m := &o.Members[i]
		m.Revision = int64(b>>4) * 10
		m.DBSize = int64(b&3) * 600 << 20
		m.DBSizeInUse = m.DBSize / int64(1+(b>>2)&3)
		if b&64 != 0 {
			m.Alarms = append(m.Alarms, Alarm{Name: AlarmNoSpace, Member: m.ID})
		}
		for j := range o.Recorded {
			if o.Recorded[j].ID == strconv.FormatUint(m.ID, 16) && b&128 != 0 {
				o.Recorded[j].DefragmentedAt = &metav1.Time{Time: o.Now.Add(-time.Duration(r.next()%16) * time.Hour)}
			}
		}
	}
	if b := r.next(); b%2 == 1 {
		o.Remedy = &etcdv1beta2.NoSpaceRemedy{CompactedAt: metav1.Time{Time: o.Now.Add(-time.Duration(b>>1%16) * time.Hour)}, CompactedRevision: 10}
	}
}

// claimUID is a claim uid of two bits: 0 is no claim.
func claimUID(b byte) string {
	if b == 0 {
		return ""
	}
	return "claim-" + strconv.Itoa(int(b))
}

// FuzzNext checks the planner's safety rules on any observed cluster: it
// never panics, changes nothing once the quorum is lost, changes the
// membership only with every member healthy and started (except removing
// a member whose data is gone, or one that never joined, which keeps a
// quorum), never leaves fewer
// healthy voters than a quorum, never adds a member of a name in use,
// removes from two voters never, and upgrades only a member whose pod is
// not at the target image.
func FuzzNext(f *testing.F) {
	for _, seed := range [][]byte{{}, {2, 3, 1, 3, 1, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0}, {0, 4, 1, 2, 0, 4, 0, 3, 4, 1, 3}, {8, 3, 1, 5, 9, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, o := observedFrom(data)
		d := Next(spec, ns, o)
		if err := checkDecision(spec, o, d); err != nil {
			t.Fatalf("spec %+v, observed %+v: decision %+v: %v", spec, o, d, err)
		}
		// A pod without the certificates never gets a start-up file that
		// needs them, unless the step deletes it, or its member's peer
		// URL is https already (the file must say so; the pod is
		// restarted from the template that mounts them).
		stages := ConfigStages(spec, o, Live{}, d)
		peerTLS := map[string]bool{}
		for _, m := range o.Members {
			peerTLS[m.Name] = m.PeerTLS
		}
		for name, pod := range o.Pods {
			if !pod.TLS && !d.Action.deletesPod(pod.UID) && !peerTLS[name] && stages.ByMember != nil {
				if _, ok := stages.ByMember[name]; ok && stages.Of(name) != Plain {
					t.Fatalf("spec %+v, observed %+v: decision %+v: the pod of %s, without the certificates, gets a file at %s", spec, o, d, name, stages.Of(name))
				}
			}
		}
	})
}

func checkDecision(spec *etcdv1beta2.EtcdClusterSpec, o Observed, d Decision) error {
	a := d.Action
	if d.Failure && a.Kind != None {
		return fmt.Errorf("a failure with an action")
	}
	if a.Kind == RestartPod && d.Reason == etcdv1beta2.ReasonRotatingCA {
		return checkRetrust(o, d)
	}
	if !o.Reachable {
		if a.Kind != None && a.Kind != Seed {
			return fmt.Errorf("action %s on a cluster no member of which answers", a.Kind)
		}
		if a.Kind == Seed && len(o.Recorded) > 0 {
			return fmt.Errorf("a seed over a recorded membership")
		}
		return nil
	}
	var voters, healthy int
	allWell := true
	byName := map[string]Member{}
	for _, m := range o.Members {
		byName[m.Name] = m
		if !m.Learner {
			voters++
			if m.Healthy {
				healthy++
			}
		}
		allWell = allWell && m.Healthy && m.Started
	}
	if healthy < Quorum(voters) {
		// Lost, or out of the operator's reach while the pods serve.
		if a.Kind != None || (d.Reason != etcdv1beta2.ReasonQuorumLost && d.Reason != etcdv1beta2.ReasonMembersUnreachable) {
			return fmt.Errorf("quorum lost (%d of %d) but %s / %s", healthy, voters, a.Kind, d.Reason)
		}
		return nil
	}
	if err := checkUpkeep(o, d, allWell); err != nil {
		return err
	}
	switch a.Kind {
	case Seed:
		return fmt.Errorf("a seed on a cluster that answers")
	case AddLearner:
		if !allWell || len(o.Members) >= int(spec.Size) {
			return fmt.Errorf("an add with members not all well or at size")
		}
		if _, used := byName[a.Member]; used {
			return fmt.Errorf("added %s, a name in use", a.Member)
		}
	case Promote:
		if m := byName[a.Member]; !m.Learner || !m.Healthy || !m.Started {
			return fmt.Errorf("promoted %+v", m)
		}
	case Remove:
		m := byName[a.Member]
		after := healthy
		if !m.Learner {
			if m.Healthy {
				after--
			}
			if after < Quorum(voters-1) {
				return fmt.Errorf("removing %s leaves %d healthy of %d voters", m.Name, after, voters-1)
			}
		}
		if m.Healthy && (!allWell || len(o.Members) <= int(spec.Size) || voters <= 2) {
			return fmt.Errorf("removed healthy %s while not shrinking safely", m.Name)
		}
		// A shrink toward one would stop at two.
		if m.Healthy && !m.Learner && spec.Size < 2 {
			return fmt.Errorf("removed voter %s toward a size of %d", m.Name, spec.Size)
		}
		// A member that has not joined (never started, or a learner)
		// holds no data the cluster needs; a voter that started does.
		if !m.Healthy && m.Started && !m.Learner {
			if r, pod := recordedOf(o, m), o.Pods[m.Name]; r.ClaimUID == "" || pod.ClaimUID == "" || r.ClaimUID == pod.ClaimUID {
				return fmt.Errorf("removed unhealthy %s whose pod may hold its data", m.Name)
			}
		}
	case RestartPod:
		m, pod := byName[a.Member], o.Pods[a.Member]
		switch {
		case pod.UID != a.PodUID:
			return fmt.Errorf("restarted the pod %+v of member %+v", pod, m)
		case d.Reason == etcdv1beta2.ReasonEnablingTLS && !spec.TLSEnabled():
			return fmt.Errorf("restarted %s for TLS without spec.TLS", m.Name)
		case d.Reason == etcdv1beta2.ReasonEnablingTLS && o.Now.Sub(pod.Created) < restartGrace && (!allWell || !allReady(o)):
			// Only a server behind its stage for restartGrace is
			// restarted while the cluster is not all well.
			return fmt.Errorf("restarted %s for TLS while not all well", m.Name)
		case d.Reason == etcdv1beta2.ReasonEnablingTLS && (m.Healthy || pod.Ready) && !othersAllWell(o, m.Name):
			// A member that serves may count for the quorum.
			return fmt.Errorf("restarted %s, which serves, for TLS while another member is not well", m.Name)
		case d.Reason != etcdv1beta2.ReasonEnablingTLS && (m.Started || !pod.CrashLooping):
			return fmt.Errorf("restarted the pod %+v of member %+v", pod, m)
		}
	case ReplaceVolume:
		// The claim of a member stranded off its node, or of a learner
		// that never started: neither holds data the cluster needs.
		m, pod := byName[a.Member], o.Pods[a.Member]
		if pod.UID != a.PodUID || pod.ClaimUID == "" || pod.ClaimUID != a.ClaimUID || m.Healthy {
			return fmt.Errorf("replaced the volume %s of %+v (pod %+v)", a.ClaimUID, m, pod)
		}
		if pod.Stranded == "" && (m.Started || !m.Learner || !pod.CrashLooping) {
			return fmt.Errorf("replaced the claim of %+v, which may hold its data", m)
		}
	case SecurePeer:
		m, pod := byName[a.Member], o.Pods[a.Member]
		if !spec.TLSEnabled() || !allWell || !allReady(o) || !pod.TLS || m.Serving == Plain || pod.UID != a.PodUID ||
			a.PeerURL != PeerURL(HTTPS, o.Cluster, ns, m.Name) || (m.Leader && len(o.Members) > 1) {
			return fmt.Errorf("moved the peer URL of %+v (pod %+v) to %s", m, pod, a.PeerURL)
		}
		for _, other := range o.Members {
			if p := o.Pods[other.Name]; !p.TLS || other.Serving == Plain {
				return fmt.Errorf("moved %s to https while %s cannot reach an https peer", m.Name, other.Name)
			}
		}
	case MoveLeader:
		if !allWell || byName[a.Member].Learner {
			return fmt.Errorf("leadership moved to %s while not all well", a.Member)
		}
	case Upgrade:
		if !allWell {
			return fmt.Errorf("an upgrade while not all well")
		}
		if o.Pods[a.Member].Image == a.Image || a.Image != spec.Image(spec.Version) {
			return fmt.Errorf("upgraded %s from %s to %s", a.Member, o.Pods[a.Member].Image, a.Image)
		}
		// One member restarting at a time.
		for _, m := range o.Members {
			if pod, ok := o.Pods[m.Name]; ok && pod.Image == a.Image && (!pod.Ready || m.Version != spec.Version) {
				return fmt.Errorf("upgraded %s while %s (%+v) restarts", a.Member, m.Name, pod)
			}
		}
	}
	return nil
}

// checkRetrust checks a restart for new CAs: of a pod that trusts other
// ones. Peer CAs replaced at once: only a member that is down (its pod not
// ready, and not counted healthy). Server CAs replaced at once: only a
// member that does not answer the operator, with every pod ready.
// Otherwise: with every member well and every pod ready, and the leader
// only as the last member.
func checkRetrust(o Observed, d Decision) error {
	pod := o.Pods[d.Action.Member]
	if pod.UID != d.Action.PodUID || !o.distrusts(pod) {
		return fmt.Errorf("restarted the pod %+v of %s for new CAs %v", pod, d.Action.Member, o.Trust)
	}
	ready := true
	for _, p := range o.Pods {
		ready = ready && p.Ready
	}
	var listed Member
	for _, m := range o.Members {
		if o.Reachable && m.Name == d.Action.Member {
			listed = m
		}
	}
	switch {
	case disjoint(pod.Trust.Peer, o.Trust.Peer):
		if pod.Ready || listed.Healthy {
			return fmt.Errorf("restarted %s for replaced peer CAs while it serves", d.Action.Member)
		}
		return nil
	case disjoint(pod.Trust.Server, o.Trust.Server):
		if !ready || listed.Version != "" {
			return fmt.Errorf("restarted %s for new server CAs while a pod is not ready or it answers the operator", d.Action.Member)
		}
		return nil
	}
	var voters, healthy int
	allWell := true
	var restarted Member
	for _, m := range o.Members {
		if !m.Learner {
			voters++
			if m.Healthy {
				healthy++
			}
		}
		allWell = allWell && m.Healthy && m.Started
		if m.Name == d.Action.Member {
			restarted = m
		}
	}
	if !o.Reachable || healthy < Quorum(voters) || !allWell || !allReady(o) {
		return fmt.Errorf("restarted %s for new CAs while not all well", d.Action.Member)
	}
	if restarted.Leader && len(o.Members) > 1 {
		return fmt.Errorf("restarted the leader %s for new CAs", d.Action.Member)
	}
	return nil
}

// checkUpkeep checks a compaction, a defragmentation or a disarm: each
// needs every member healthy; a compaction and a disarm a NOSPACE alarm
// raised, the disarm after every member was defragmented since the
// remedy's compaction; a defragmentation outside an alarm every pod
// ready, and the leader only once no follower is due.
func checkUpkeep(o Observed, d Decision, allWell bool) error {
	a := d.Action
	if a.Kind != Compact && a.Kind != Defragment && a.Kind != Disarm {
		return nil
	}
	noSpace := false
	for _, m := range o.Members {
		noSpace = noSpace || slices.ContainsFunc(m.Alarms, func(x Alarm) bool { return x.Name == AlarmNoSpace })
	}
	switch {
	case !allWell:
		return fmt.Errorf("%s with a member not well", a.Kind)
	case (a.Kind == Compact || a.Kind == Disarm) && !noSpace:
		return fmt.Errorf("%s without a NOSPACE alarm", a.Kind)
	case a.Kind == Compact && (o.Remedy != nil || a.Revision < 1):
		return fmt.Errorf("compacted to %d with a remedy recorded (%v)", a.Revision, o.Remedy)
	case a.Kind == Defragment && !noSpace && !allReady(o):
		return fmt.Errorf("defragmented %s on schedule with a pod not ready", a.Member)
	case a.Kind == Defragment && noSpace && o.Remedy == nil:
		return fmt.Errorf("defragmented %s before the remedy's compaction", a.Member)
	}
	if a.Kind == Disarm {
		for _, m := range o.Members {
			if r := recordedOf(o, m); !m.Learner && (r.DefragmentedAt == nil || r.DefragmentedAt.Before(&o.Remedy.CompactedAt)) {
				return fmt.Errorf("disarmed with %s not defragmented since the compaction", m.Name)
			}
		}
	}
	if a.Kind == Defragment {
		for _, m := range o.Members {
			if m.Name == a.Member && m.Leader && len(o.Members) > 1 {
				for _, f := range o.Members {
					r := recordedOf(o, f)
					if f.Leader || f.Learner {
						continue
					}
					if noSpace && (r.DefragmentedAt == nil || r.DefragmentedAt.Before(&o.Remedy.CompactedAt)) {
						return fmt.Errorf("defragmented the leader %s before follower %s", a.Member, f.Name)
					}
				}
			}
		}
	}
	return nil
}

// othersAllWell reports whether every member but name is started and
// healthy, with its pod ready.
func othersAllWell(o Observed, name string) bool {
	for _, m := range o.Members {
		if m.Name != name && (!m.Started || !m.Healthy || !o.Pods[m.Name].Ready) {
			return false
		}
	}
	return true
}

// allReady reports whether every member's pod exists and is ready.
func allReady(o Observed) bool {
	for _, m := range o.Members {
		if !o.Pods[m.Name].Ready {
			return false
		}
	}
	return true
}

func recordedOf(o Observed, m Member) etcdv1beta2.EtcdMember {
	for _, r := range o.Recorded {
		if r.ID == strconv.FormatUint(m.ID, 16) {
			return r
		}
	}
	return etcdv1beta2.EtcdMember{}
}

// FuzzBuild builds the children of EtcdClusters whose specs are filled
// from the fuzz input spec (see fuzzspec.Decode), with the membership
// recorded in their status drawn from members: the StatefulSet has a pod
// for every registered member, the ConfigMap has a start-up file for
// exactly the registered members, in which a member not started yet joins
// with exactly the registered members and a started one names only itself,
// a new cluster is bootstrapped only by a seed etcd has not reported yet,
// the PodDisruptionBudget keeps a quorum of the registered members, and the
// same input builds the same children. The seed corpus is in
// testdata/fuzz/FuzzBuild.
func FuzzBuild(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"example"},"spec":{"size":3,"version":"3.6.16"}}`), []byte{1, 0, 0, 0})
	f.Add([]byte(`{"metadata":{"name":"example"},"spec":{"size":5,"version":"3.7.0"}}`), []byte{3, 1, 0, 1, 1, 1, 2, 0, 9})
	f.Fuzz(func(t *testing.T, spec, membership []byte) {
		e := &etcdv1beta2.EtcdCluster{}
		fuzzspec.Decode(spec, "ns", e)
		e.UID = "uid"
		r := bytesReader(membership)
		var members []etcdv1beta2.EtcdMember
		used := map[int]bool{}
		for range int(r.next() % 10) {
			o := int(r.next() % 10)
			if used[o] {
				continue
			}
			used[o] = true
			m := etcdv1beta2.EtcdMember{Name: MemberName(e.Name, o)}
			switch r.next() % 3 {
			case 1:
				m.ID = strconv.Itoa(o + 1)
			case 2:
				m.ID, m.ClaimUID = strconv.Itoa(o+1), "claim-"+strconv.Itoa(o)
			}
			members = append(members, m)
		}
		owner := resources.OwnerOf(e, etcdv1beta2.GroupVersion.WithKind("EtcdCluster"))
		c := Build(owner, &e.Spec, FromStatus(e.Name, members))
		replicas := *c.StatefulSet.Spec.Replicas
		for o := range used {
			if int32(o) >= replicas {
				t.Fatalf("member %d registered, replicas %d", o, replicas)
			}
		}
		if len(c.ConfigMap.Data) != len(members) {
			t.Fatalf("%d start-up files for %d members", len(c.ConfigMap.Data), len(members))
		}
		newCluster := len(members) == 1 && members[0].ID == ""
		for _, m := range members {
			var cfg Config
			if err := yaml.UnmarshalStrict([]byte(c.ConfigMap.Data[ConfigKey(m.Name)]), &cfg); err != nil {
				t.Fatalf("member %s: %v", m.Name, err)
			}
			scheme := SchemeOf(&e.Spec)
			want := InitialCluster(Stages{Default: StageOf(scheme)}, e.Name, "ns", members)
			if m.ClaimUID != "" {
				want = m.Name + "=" + PeerURL(scheme, e.Name, "ns", m.Name)
			}
			if cfg.Name != m.Name || cfg.InitialCluster != want || cfg.InitialAdvertisePeerURLs != PeerURL(scheme, e.Name, "ns", m.Name) ||
				(cfg.ClientTransportSecurity != nil) != e.Spec.TLSEnabled() || (cfg.PeerTransportSecurity != nil) != e.Spec.TLSEnabled() {
				t.Fatalf("member %+v of %+v: start-up file %+v", m, members, cfg)
			}
			if (cfg.InitialClusterState == ClusterStateNew) != newCluster {
				t.Fatalf("members %+v: state %s", members, cfg.InitialClusterState)
			}
		}
		if (c.PodDisruptionBudget != nil) != (len(members) > 1) {
			t.Fatalf("%d members: PodDisruptionBudget %v", len(members), c.PodDisruptionBudget != nil)
		}
		if c.PodDisruptionBudget != nil && c.PodDisruptionBudget.Spec.MinAvailable.IntValue() != Quorum(len(members)) {
			t.Fatalf("%d members: minAvailable %v", len(members), c.PodDisruptionBudget.Spec.MinAvailable)
		}
		if err := fuzzspec.Same(c.Objects(), Build(owner, &e.Spec, FromStatus(e.Name, members)).Objects()); err != nil {
			t.Fatal(err)
		}
	})
}
