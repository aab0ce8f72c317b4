package etcdcluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Member is what the operator read of one etcd member through etcd's API.
type Member struct {
	ID uint64
	// Name is the member's name, or, for a member that has not started
	// yet (etcd reports no name), the one its peer URL gives.
	Name string
	// Started is whether the member has run: etcd reports its name.
	Started bool
	Learner bool
	// Healthy is whether the member answered its status call and knows
	// a leader.
	Healthy bool
	Leader  bool
	// PeerTLS is whether the member's registered peer URLs are https.
	PeerTLS bool
	// Serving is the TLS stage the member's server started at (see
	// ServingStage).
	Serving Stage
	// Version is the version the member's server reports; empty when it
	// does not answer.
	Version string
	// Alarms are the alarms the member reports raised in the cluster.
	Alarms []Alarm
	// Revision is the revision the member has applied; DBSize and
	// DBSizeInUse are its database file's size and the part of it that
	// holds data (the rest, free pages, a defragmentation gives back).
	Revision            int64
	DBSize, DBSizeInUse int64
}

// Alarm is an alarm raised in the cluster.
type Alarm struct {
	// Name is the alarm as etcd names it (AlarmNoSpace, AlarmCorrupt).
	Name string
	// Member is the ID of the member it is raised for; 0 when unknown.
	Member uint64
}

// String is the alarm's name.
func (a Alarm) String() string { return a.Name }

// Pod is what the operator read of a member's pod.
type Pod struct {
	UID string
	// Image is the image of the pod's etcd container.
	Image string
	// ClaimUID is the uid of the claim that holds the pod's data; empty
	// while the claim is not there.
	ClaimUID string
	// CrashLooping is whether the kubelet waits to start the etcd
	// container again after it exited.
	CrashLooping bool
	// Ready is the pod's Ready condition: what the client Service and the
	// PodDisruptionBudget go by. The readiness probe asks the member's
	// /health: a ready pod's member serves, whether the operator reaches
	// it or not.
	Ready bool
	// Created is when the pod was created.
	Created time.Time
	// ClaimCreated is when the claim of ClaimUID was created.
	ClaimCreated time.Time
	// Stranded, when set, says why the pod cannot be scheduled again: its
	// volume is local to a node that is gone or cordoned.
	Stranded string
	// TLS is whether the pod mounts the members' certificates (TLSLabel).
	TLS bool
	// Trust is the pod's TrustAnnotation: the CAs its member trusts;
	// zero when the pod has none.
	Trust Trust
}

// Observed is everything the planner decides from.
type Observed struct {
	// Cluster is the EtcdCluster's name.
	Cluster string
	// Reachable is whether any member answered the member list.
	Reachable bool
	// Members are the members etcd reports (when Reachable).
	Members []Member
	// FromLeader is whether Members is the leader's list: a follower's may
	// trail the latest membership change.
	FromLeader bool
	// Foreign names the pods that answered as members of another etcd
	// cluster: they are not counted.
	Foreign []string
	// Recorded is the membership the operator recorded (status.members).
	Recorded []etcdv1beta2.EtcdMember
	// Remedy is the NOSPACE remedy recorded (status.noSpaceRemedy): the
	// compaction made; nil when none is under way.
	Remedy *etcdv1beta2.NoSpaceRemedy
	// Pods are the member pods that exist and are not being deleted, by name.
	Pods map[string]Pod
	// Claims are the members' claims that exist, by name, with their uids:
	// a cluster with claims holds data, and is never seeded again.
	Claims map[string]string
	// Now is when the observation was made.
	Now time.Time
	// Trust is the CAs the Secrets of spec.TLS hold now; zero without
	// TLS.
	Trust Trust
	// JoinTimeout is how long a member may take to join: a member added
	// this long ago (status.members' addedAt, or, where none is recorded,
	// its pod's creation) that has not started, or a learner that does not
	// answer, is removed (and added again later), so that it blocks no
	// other change. DefaultJoinTimeout when zero.
	JoinTimeout time.Duration
	// Switchover is the member a request not yet handled moves the
	// leadership to (switchover.Any for any); "" when there is none. It
	// is answered once the cluster has no other step to take.
	Switchover string
}

// DefaultJoinTimeout is the JoinTimeout of an Observed that sets none:
// enough for a learner to receive a snapshot of a few gigabytes.
const DefaultJoinTimeout = 5 * time.Minute

// ActionKind is what one step does to the cluster.
type ActionKind string

const (
	// None: nothing to do, or nothing safe to do.
	None ActionKind = ""
	// Seed records the seed member, whose pod then bootstraps a cluster
	// of one.
	Seed ActionKind = "Seed"
	// AddLearner adds a member as a learner.
	AddLearner ActionKind = "AddLearner"
	// Promote promotes a learner; etcd refuses until it has caught up.
	Promote ActionKind = "Promote"
	// Remove removes a member through etcd's API; its pod goes after.
	Remove ActionKind = "Remove"
	// MoveLeader hands the leadership to another member before the
	// leader is removed.
	MoveLeader ActionKind = "MoveLeader"
	// Upgrade sets the image of a member's pod to the target version's;
	// the kubelet restarts the container with the member's data.
	Upgrade ActionKind = "Upgrade"
	// RestartPod deletes the pod of a member that is joining: the pod
	// started before the member was registered (it replaces a member whose
	// data was lost) and waits out the kubelet's back-off; a new pod joins
	// at once, on the same claim.
	RestartPod ActionKind = "RestartPod"
	// SecurePeer moves a member's peer URL to https, then deletes its pod,
	// which restarts at Secure on the same claim.
	SecurePeer ActionKind = "SecurePeer"
	// ReplaceVolume deletes the claim and the pod of a member whose volume
	// is local to a node that is gone or cordoned: the StatefulSet makes
	// both again, the claim on a node that takes pods, and the member,
	// back without its data, is replaced. It also deletes those of a
	// learner joining on a claim left by a removed member (see stuckJoin).
	ReplaceVolume ActionKind = "ReplaceVolume"
)

// The alarms etcd raises. While any is raised, the cluster refuses writes.
const (
	// AlarmNoSpace: a member's backend reached its quota.
	AlarmNoSpace = "NOSPACE"
	// AlarmCorrupt: etcd's corruption check found a member whose data
	// differs from the others'.
	AlarmCorrupt = "CORRUPT"
)

// Action is the single next step.
type Action struct {
	Kind ActionKind
	// Member names the member the action is about (the one added,
	// promoted, removed, upgraded or whose pod restarts).
	Member string
	// PodUID is the uid of the pod RestartPod, SecurePeer or
	// ReplaceVolume deletes.
	PodUID string
	// ClaimUID is the uid of the claim ReplaceVolume deletes.
	ClaimUID string
	// ID is that member's ID (for Promote, Remove, Upgrade); for
	// MoveLeader, the ID of the member that takes the leadership.
	ID uint64
	// PeerURL is the peer URL of a member added, or SecurePeer gives.
	PeerURL string
	// Image is the image an upgraded member's pod gets.
	Image string
	// Revision is the revision Compact compacts to.
	Revision int64
}

// Decision is the planner's answer: one action (or none), and what the
// status says about it.
type Decision struct {
	Action Action
	// Reason is a condition reason (Scaling, Upgrading, ...); empty once
	// the cluster is at the spec.
	Reason  string
	Message string
	// Failure is set when the cluster cannot reach the spec without help
	// (quorum lost, a refused scale-in, a version skew): no action then.
	Failure bool
	// Switchover is set on the MoveLeader that Observed.Switchover asks
	// for; Refusal when that request is refused.
	Switchover bool
	Refusal    *SwitchoverRefusal
}

// Done reports whether the cluster is at the spec.
func (d Decision) Done() bool { return d.Reason == "" }

// Next returns the single next step that takes the cluster observed in o
// toward spec, in this order: seed; stop when the quorum is lost; finish
// the membership change in flight (a member joining, a learner to
// promote); replace a member whose data is gone; wait for unhealthy
// members; restart one member for a change rolled one member at a time
// (version, TLS, CAs); add or remove one member. Every change needs every
// member healthy, except the removal of a member whose data is gone,
// which needs a quorum of the others, and the restart of a member cut off
// by a change of CA made at once, which comes first (see replaced).
//
// A request to move the leadership (Observed.Switchover) is answered only
// when there is no other step to take.
func Next(spec *etcdv1beta2.EtcdClusterSpec, namespace string, o Observed) Decision {
	return requestedMove(next(spec, namespace, o), o)
}

func next(spec *etcdv1beta2.EtcdClusterSpec, namespace string, o Observed) Decision {
	if d, ok := replaced(o); ok {
		return d
	}
	if !o.Reachable {
		return unreachable(o)
	}
	members := slices.Clone(o.Members)
	slices.SortFunc(members, func(a, b Member) int { return compareNames(o.Cluster, a.Name, b.Name) })

	var voters, healthyVoters int
	var down []string
	for _, m := range members {
		if !m.Learner {
			voters++
			if m.Healthy {
				healthyVoters++
			}
		}
		if !m.Healthy {
			down = append(down, m.Name)
		}
	}
	if healthyVoters < Quorum(voters) {
		return noQuorum(o, members, voters, healthyVoters)
	}
	if d, ok := alarmed(spec, o, members); ok {
		return d
	}
	// A member that has not joined and that the spec no longer asks for,
	// or that has had its time: it is removed, so that it blocks no other
	// change. A learner, or a member that never started, holds no data
	// the cluster needs and counts for no quorum it has.
	if d, ok := abandonJoin(spec, o, members); ok {
		return d
	}

	// The membership change in flight.
	for _, m := range members {
		if m.Started {
			continue
		}
		if d, ok := stuckJoin(o, m); ok {
			return d
		}
		return Decision{Reason: etcdv1beta2.ReasonScaling, Message: fmt.Sprintf("Member %s is joining", m.Name)}
	}
	for _, m := range members {
		if m.Learner && m.Healthy {
			return Decision{Action: Action{Kind: Promote, Member: m.Name, ID: m.ID}, Reason: etcdv1beta2.ReasonScaling,
				Message: fmt.Sprintf("Promoting learner %s once it has caught up with the leader", m.Name)}
		}
	}

	// A member whose pod came back on another claim than the one that
	// held its data: its data is gone, and it cannot rejoin as itself (its
	// start-up file names no peer). Removing it keeps the quorum (it is
	// down); it is added back as a new member afterwards.
	recorded := map[uint64]etcdv1beta2.EtcdMember{}
	for _, r := range o.Recorded {
		if id, err := strconv.ParseUint(r.ID, 16, 64); err == nil {
			recorded[id] = r
		}
	}
	for _, m := range members {
		pod, ok := o.Pods[m.Name]
		if r := recorded[m.ID]; !m.Healthy && ok && r.ClaimUID != "" && pod.ClaimUID != "" && r.ClaimUID != pod.ClaimUID {
			return Decision{Action: Action{Kind: Remove, Member: m.Name, ID: m.ID}, Reason: etcdv1beta2.ReasonReplacing,
				Message: fmt.Sprintf("Removing member %s: its pod runs on a new claim, without the member's data; it is added back as a new member", m.Name)}
		}
	}
	// A member whose pod cannot be scheduled because its volume is local
	// to a node that is gone or cordoned: its data is out of reach.
	// Deleting its claim and pod lets the StatefulSet make both again on a
	// node that takes pods, where the member, on an empty claim, is
	// replaced (above). The quorum holds without it (checked above).
	for _, m := range members {
		if pod, ok := o.Pods[m.Name]; ok && !m.Healthy && pod.Stranded != "" && pod.ClaimUID != "" {
			return Decision{Action: Action{Kind: ReplaceVolume, Member: m.Name, PodUID: pod.UID, ClaimUID: pod.ClaimUID}, Reason: etcdv1beta2.ReasonReplacing,
				Message: fmt.Sprintf("Replacing the volume of member %s: %s; the member is added back as a new member on another node", m.Name, pod.Stranded)}
		}
	}
	if d, ok := staleServer(spec, o, members); ok {
		return d
	}
	if len(down) > 0 {
		if out := outOfReach(o, members); len(out) == len(down) {
			// The members that keep the quorum answer; the others serve
			// too: the operator alone is cut off from them.
			return Decision{Reason: etcdv1beta2.ReasonMembersUnreachable, Failure: true, Message: fmt.Sprintf(
				"The operator cannot reach members %s, whose pods are ready (they serve); the members it reaches keep the quorum. It changes nothing until it reaches them (check the network between it and the pods)",
				strings.Join(out, ", "))}
		}
		return Decision{Reason: etcdv1beta2.ReasonMemberUnhealthy, Message: fmt.Sprintf("Waiting for unhealthy members: %s", strings.Join(down, ", "))}
	}

	if d, ok := rolling(spec, namespace, o, members); ok {
		return d
	}

	size := int(spec.Size)
	switch {
	case len(members) < size:
		name := freeName(o.Cluster, members)
		if d, ok := leftover(o, members, name); ok {
			return d
		}
		url := PeerURL(addScheme(spec, o, members), o.Cluster, namespace, name)
		return Decision{Action: Action{Kind: AddLearner, Member: name, PeerURL: url}, Reason: etcdv1beta2.ReasonScaling,
			Message: fmt.Sprintf("Adding member %s (%d of %d)", name, len(members)+1, size)}
	case len(members) > size:
		if voters <= 2 {
			return Decision{Reason: etcdv1beta2.ReasonScaleInRefused, Failure: true, Message: fmt.Sprintf(
				"Not removing a member from %d: a cluster of two cannot remove one safely (the removal needs both, and losing either during it loses the cluster); set size to %d",
				voters, voters)}
		}
		if size < 2 {
			// The removals would stop at two (above): a cluster that
			// survives no failure, as one does, with twice the members
			// to fail. None is made.
			return Decision{Reason: etcdv1beta2.ReasonScaleInRefused, Failure: true, Message: fmt.Sprintf(
				"Not removing members from %d toward %d: the last removal would be from a cluster of two, which cannot remove one safely, and the cluster would stop at two members, which survive no failure; set size to 2 or more (a cluster of one is made by restoring a snapshot into a new EtcdCluster: EtcdRestore)",
				voters, size)}
		}
		victim := members[len(members)-1]
		if victim.Leader {
			to := members[0]
			return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: etcdv1beta2.ReasonScaling,
				Message: fmt.Sprintf("Moving the leadership from %s to %s before removing %s", victim.Name, to.Name, victim.Name)}
		}
		return Decision{Action: Action{Kind: Remove, Member: victim.Name, ID: victim.ID}, Reason: etcdv1beta2.ReasonScaling,
			Message: fmt.Sprintf("Removing member %s (%d of %d)", victim.Name, len(members)-1, size)}
	}
	if d, ok := scheduledDefrag(spec, o, members); ok {
		return d
	}
	return Decision{Message: fmt.Sprintf("%d members at version %s", len(members), spec.Version)}
}

// outOfReach returns the members that do not answer the operator but whose
// pods pass their readiness probe (etcd's /health): they serve, and the
// operator is cut off from them.
func outOfReach(o Observed, members []Member) []string {
	var out []string
	for _, m := range members {
		if !m.Healthy && m.Version == "" && o.Pods[m.Name].Ready {
			out = append(out, m.Name)
		}
	}
	return out
}

// noQuorum says why fewer voters than a quorum are healthy: members the
// operator is cut off from (MembersUnreachable), or a lost quorum.
func noQuorum(o Observed, members []Member, voters, healthyVoters int) Decision {
	// A member that answers but knows no leader is up, not down; one
	// that does not answer the operator but whose pod passes its
	// readiness probe serves: the operator is cut off from it.
	var silent, leaderless, unreachable []string
	reachableVoters := healthyVoters
	for _, m := range members {
		switch {
		case m.Healthy:
		case m.Version == "" && o.Pods[m.Name].Ready:
			unreachable = append(unreachable, m.Name)
			if !m.Learner {
				reachableVoters++
			}
		case m.Version == "":
			silent = append(silent, m.Name)
		default:
			leaderless = append(leaderless, m.Name)
		}
	}
	if len(unreachable) > 0 && reachableVoters >= Quorum(voters) {
		return Decision{Reason: etcdv1beta2.ReasonMembersUnreachable, Failure: true, Message: fmt.Sprintf(
			"The operator cannot reach members %s, whose pods are ready (they serve): %d of %d voting members answer it. The operator changes nothing until it reaches a quorum of them (check the network between it and the pods)",
			strings.Join(unreachable, ", "), healthyVoters, voters)}
	}
	silent = append(silent, unreachable...)
	slices.SortFunc(silent, func(a, b string) int { return compareNames(o.Cluster, a, b) })
	msg := fmt.Sprintf("%d of %d voting members are healthy, %d needed for a quorum; down: %s", healthyVoters, voters, Quorum(voters), strings.Join(silent, ", "))
	if len(leaderless) > 0 {
		msg += "; up without a leader: " + strings.Join(leaderless, ", ")
	}
	return Decision{Reason: etcdv1beta2.ReasonQuorumLost, Failure: true, Message: msg + ". The operator changes nothing until a quorum is back"}
}

// alarmed returns the failure of a cluster with an alarm raised: etcd
// refuses writes until it is disarmed, and the operator changes nothing
// meanwhile. CORRUPT (Corrupt) comes first, then NOSPACE (NoSpace), then
// any other (Alarm); the message names the others raised beside. false
// when no member reports an alarm.
func alarmed(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) (Decision, bool) {
	type raised struct{ by, forMembers []string }
	alarms := map[string]*raised{}
	for _, m := range members {
		for _, a := range m.Alarms {
			r := alarms[a.Name]
			if r == nil {
				r = &raised{}
				alarms[a.Name] = r
			}
			if !slices.Contains(r.by, m.Name) {
				r.by = append(r.by, m.Name)
			}
			if name := memberNamed(members, a.Member); name != "" && !slices.Contains(r.forMembers, name) {
				r.forMembers = append(r.forMembers, name)
			}
		}
	}
	if len(alarms) == 0 {
		return Decision{}, false
	}
	names := slices.Sorted(maps.Keys(alarms))
	name := names[0]
	switch {
	case alarms[AlarmCorrupt] != nil:
		name = AlarmCorrupt
	case alarms[AlarmNoSpace] != nil:
		name = AlarmNoSpace
	}
	r := alarms[name]
	slices.SortFunc(r.forMembers, func(a, b string) int { return compareNames(o.Cluster, a, b) })
	by := strings.Join(r.by, ", ")
	var d Decision
	switch name {
	case AlarmCorrupt:
		suspect := "the member it is raised for (etcdctl alarm list names its ID)"
		mend := "delete that member's claim and pod (kubectl delete pvc data-<member> --wait=false, then kubectl delete pod <member>)"
		if len(r.forMembers) > 0 {
			suspect = "member " + strings.Join(r.forMembers, ", ")
			mend = fmt.Sprintf("delete that member's claim and pod (kubectl delete pvc %s --wait=false, then kubectl delete pod %s)",
				ClaimName(r.forMembers[0]), r.forMembers[0])
		}
		d = Decision{Reason: etcdv1beta2.ReasonCorrupt, Message: fmt.Sprintf(
			"etcd raised its CORRUPT alarm for %s (reported by %s): its corruption check found data that differs between members, and the cluster refuses writes until the alarm is disarmed. The operator changes nothing meanwhile. Find the member whose data differs from the others' (etcdctl endpoint hashkv --cluster; etcd suspects %s), %s, then disarm the alarm (etcdctl alarm disarm): the operator replaces that member by one that copies the others' data. Or restore a snapshot into a new cluster (EtcdRestore)",
			suspect, by, suspect, mend)}
	case AlarmNoSpace:
		if len(names) == 1 {
			return remedyNoSpace(spec, o, members, by), true
		}
		d = Decision{Reason: etcdv1beta2.ReasonNoSpace, Message: fmt.Sprintf(
			"etcd raised its NOSPACE alarm (reported by %s): a member's backend reached its quota, and the cluster refuses writes until the alarm is disarmed (compact, defragment, then etcdctl alarm disarm). The operator changes nothing meanwhile",
			by)}
	default:
		d = Decision{Reason: etcdv1beta2.ReasonAlarm, Message: fmt.Sprintf(
			"etcd raised its %s alarm (reported by %s), which the cluster may refuse writes for until it is disarmed. The operator changes nothing meanwhile: read etcd's logs for its cause (etcdctl alarm list names the member), mend it, then disarm the alarm (etcdctl alarm disarm)",
			name, by)}
	}
	if others := slices.DeleteFunc(names, func(n string) bool { return n == name }); len(others) > 0 {
		d.Message += "; also raised: " + strings.Join(others, ", ")
	}
	d.Failure = true
	return d, true
}

// memberNamed is the name of the member of ID id; empty when none is.
func memberNamed(members []Member, id uint64) string {
	for _, m := range members {
		if id != 0 && m.ID == id {
			return m.Name
		}
	}
	return ""
}

// abandonJoin returns the removal of a member that has not joined (not
// started, or a learner that does not answer) when the spec no longer
// asks for it (fewer members than there are), or when it was added
// o.JoinTimeout ago (see addedAt) without joining; false when there is
// none.
func abandonJoin(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) (Decision, bool) {
	timeout := cmp.Or(o.JoinTimeout, DefaultJoinTimeout)
	for _, m := range slices.Backward(members) {
		// A member that answers healthy has joined, whatever the list
		// says of it.
		if m.Healthy || (m.Started && !m.Learner) {
			continue
		}
		added := addedAt(o, m)
		switch {
		case len(members) > int(spec.Size):
			return Decision{Action: Action{Kind: Remove, Member: m.Name, ID: m.ID}, Reason: etcdv1beta2.ReasonScaling,
				Message: fmt.Sprintf("Removing member %s, which has not joined, since size is %d", m.Name, spec.Size)}, true
		case !added.IsZero() && !o.Now.IsZero() && o.Now.Sub(added) >= timeout:
			return Decision{Action: Action{Kind: Remove, Member: m.Name, ID: m.ID}, Reason: etcdv1beta2.ReasonScaling,
				Message: fmt.Sprintf("Removing member %s, which has not joined within %s; it is added again after the other changes", m.Name, timeout)}, true
		}
	}
	return Decision{}, false
}

// addedAt is when member m was added: status.members' addedAt; where none
// is recorded (a member added before the operator recorded it), its pod's
// creation; zero when neither is known. Neither a restart of its pod nor a
// new claim moves it.
func addedAt(o Observed, m Member) time.Time {
	id := strconv.FormatUint(m.ID, 16)
	for _, r := range o.Recorded {
		if r.ID == id && r.AddedAt != nil {
			return r.AddedAt.Time
		}
	}
	return o.Pods[m.Name].Created
}

// stuckJoin returns the step for a member that has not started and whose
// pod waits out a crash loop; false when there is none. A pod created
// before the member was added started without the member's start-up
// file (it replaces a member whose data was lost, or is left from a
// member removed below the highest ordinal, whose pod the StatefulSet
// keeps): a new pod joins at once, on the same claim. A learner's pod
// created since, on a claim made before the member was added, exits on
// what that claim holds: the data of a member etcd removed, which etcd
// turns away at every start. A learner holds no data the cluster needs:
// its claim and pod are deleted, and the StatefulSet makes both again, the
// claim empty. Any other such pod is left to the join timeout.
func stuckJoin(o Observed, m Member) (Decision, bool) {
	pod, ok := o.Pods[m.Name]
	if !ok || !pod.CrashLooping {
		return Decision{}, false
	}
	added := addedAt(o, m)
	switch {
	case !pod.Created.After(added):
		return Decision{Action: Action{Kind: RestartPod, Member: m.Name, PodUID: pod.UID}, Reason: etcdv1beta2.ReasonScaling,
			Message: fmt.Sprintf("Restarting the pod of joining member %s, which started before the member was added", m.Name)}, true
	case m.Learner && !m.Healthy && pod.ClaimUID != "" && !pod.ClaimCreated.IsZero() && pod.ClaimCreated.Before(added):
		return Decision{Action: Action{Kind: ReplaceVolume, Member: m.Name, PodUID: pod.UID, ClaimUID: pod.ClaimUID}, Reason: etcdv1beta2.ReasonScaling,
			Message: fmt.Sprintf("Replacing the claim %s of joining member %s: it was made before the member was added (a removed member's data), and the member's pod exits on it; the member starts on a new, empty claim",
				ClaimName(m.Name), m.Name)}, true
	}
	return Decision{}, false
}

// leftover returns the wait for the pod and the claim of name to go, when
// name is to be added past the highest ordinal of the members (a pod the
// StatefulSet adds at its end) and a pod or a claim of that name is still
// there; false when there is none. They are what is left of a member
// removed from the end (a learner that never joined, a scale-in): the
// StatefulSet deletes the pod, and the claim with it, which holds the
// removed member's data. A member added before they are gone gets that
// pod or claim back once the StatefulSet grows again, and starts from
// the data as the removed member, which etcd turns away: its pod exits
// at every start, and the member never joins.
func leftover(o Observed, members []Member, name string) (Decision, bool) {
	ordinal, ok := Ordinal(o.Cluster, name)
	if !ok {
		return Decision{}, false
	}
	for _, m := range members {
		if n, ok := Ordinal(o.Cluster, m.Name); ok && n > ordinal {
			// A gap: its pod is not at the StatefulSet's end.
			return Decision{}, false
		}
	}
	_, pod := o.Pods[name]
	_, claim := o.Claims[ClaimName(name)]
	if !pod && !claim {
		return Decision{}, false
	}
	return Decision{Reason: etcdv1beta2.ReasonScaling, Message: fmt.Sprintf(
		"Waiting for the StatefulSet to delete the pod and claim %s of a member removed before adding %s again: it would start from the removed member's data",
		ClaimName(name), name)}, true
}

// unreachable decides when no member answers: start the seed (only where
// no member's pod or claim exists: a cluster with data is never seeded
// again, whatever its status says), wait for it, or say why no member
// answers.
func unreachable(o Observed) Decision {
	switch {
	case len(o.Recorded) == 0 && len(o.Pods) == 0 && len(o.Claims) == 0:
		name := MemberName(o.Cluster, 0)
		return Decision{Action: Action{Kind: Seed, Member: name}, Reason: etcdv1beta2.ReasonScaling, Message: fmt.Sprintf("Starting seed member %s", name)}
	case len(o.Recorded) == 1 && o.Recorded[0].ID == "":
		return Decision{Reason: etcdv1beta2.ReasonScaling, Message: fmt.Sprintf("Waiting for seed member %s to start", o.Recorded[0].Name)}
	}
	var ready []string
	for name, p := range o.Pods {
		if p.Ready {
			ready = append(ready, name)
		}
	}
	if len(ready) > 0 {
		slices.SortFunc(ready, func(a, b string) int { return compareNames(o.Cluster, a, b) })
		return Decision{Reason: etcdv1beta2.ReasonMembersUnreachable, Failure: true, Message: fmt.Sprintf(
			"No member answers the operator, but the pods of %s are ready (their members serve): the operator is cut off from them. It changes nothing until it reaches them (check the network between it and the pods)",
			strings.Join(ready, ", "))}
	}
	names := make([]string, 0, len(o.Recorded))
	for _, r := range o.Recorded {
		names = append(names, r.Name)
	}
	if len(names) == 0 {
		// No recorded membership (a re-created resource): the pods and
		// claims say which members there are.
		for name := range o.Pods {
			names = append(names, name)
		}
		for claim := range o.Claims {
			if name, ok := strings.CutPrefix(claim, DataVolume+"-"); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int { return compareNames(o.Cluster, a, b) })
	return Decision{Reason: etcdv1beta2.ReasonQuorumLost, Failure: true, Message: fmt.Sprintf(
		"No member answers; down: %s. The operator changes nothing until a quorum is back", strings.Join(names, ", "))}
}

// rolling returns the next step of a change that restarts every member,
// one at a time, every member healthy: to spec.version (upgrade), to TLS
// (secure), to new CAs (retrust), in that order; false when none is under
// way.
func rolling(spec *etcdv1beta2.EtcdClusterSpec, namespace string, o Observed, members []Member) (Decision, bool) {
	if d, ok := upgrade(spec, o, members); ok {
		return d, true
	}
	if d, ok := secure(spec, namespace, o, members); ok {
		return d, true
	}
	return retrust(o, members)
}

// upgrade returns the next member to move to spec.version: a
// non-leader first, the leader last (after handing its leadership to a
// member at the target), each only once the one before runs the target
// version and every member's pod is ready (the first one too: a member
// just promoted from a learner is healthy before its pod is ready). The
// version moves one minor at a time at most, and never down.
func upgrade(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) (Decision, bool) {
	pods := o.Pods
	target := spec.Image(spec.Version)
	var stale []Member
	for _, m := range members {
		if pod, ok := pods[m.Name]; ok && pod.Image != target {
			stale = append(stale, m)
		}
	}
	for _, m := range members {
		pod, ok := pods[m.Name]
		if !ok || pod.Image != target {
			continue
		}
		// A member's pod turns ready a probe period after etcd answers:
		// the next member waits for it, or two would be out of the
		// client Service and the budget at once.
		if m.Version != spec.Version || (len(stale) > 0 && !pod.Ready) {
			return Decision{Reason: etcdv1beta2.ReasonUpgrading, Message: fmt.Sprintf("Member %s is restarting at version %s", m.Name, spec.Version)}, true
		}
	}
	if len(stale) == 0 {
		return Decision{}, false
	}
	lowest := lowestVersion(members)
	if msg := skew(lowest, spec.Version); msg != "" {
		return Decision{Reason: etcdv1beta2.ReasonVersionSkew, Failure: true, Message: msg}, true
	}
	if name, ok := restarting(o, members); ok {
		return Decision{Reason: etcdv1beta2.ReasonUpgrading, Message: fmt.Sprintf("Waiting for the pod of member %s to be ready before upgrading the next member to %s", name, spec.Version)}, true
	}
	m, to := nextToRestart(members, stale, func(m Member) bool { return pods[m.Name].Image == target })
	if to != nil {
		return Decision{Action: Action{Kind: MoveLeader, Member: to.Name, ID: to.ID}, Reason: etcdv1beta2.ReasonUpgrading,
			Message: fmt.Sprintf("Moving the leadership from %s to %s before upgrading %s", m.Name, to.Name, m.Name)}, true
	}
	return Decision{Action: Action{Kind: Upgrade, Member: m.Name, ID: m.ID, Image: target}, Reason: etcdv1beta2.ReasonUpgrading,
		Message: fmt.Sprintf("Upgrading member %s to %s (%d of %d members left)", m.Name, spec.Version, len(stale), len(members))}, true
}

// restarting returns the first member whose pod is missing or not ready:
// a change rolled one member at a time restarts the next member only once
// the one before is back in the client Service and the budget.
func restarting(o Observed, members []Member) (string, bool) {
	for _, m := range members {
		if pod, ok := o.Pods[m.Name]; !ok || !pod.Ready {
			return m.Name, true
		}
	}
	return "", false
}

// nextToRestart returns, of left (the members a rolling change has not
// reached yet), the one it restarts next: a follower first, the leader
// last (one election, not one per member). When that is the leader of a
// cluster of more than one, handTo is the member it hands its leadership
// to first (see successor), so that writes wait for no election while it
// restarts; nil otherwise.
func nextToRestart(members, left []Member, done func(Member) bool) (m Member, handTo *Member) {
	i := slices.IndexFunc(left, func(m Member) bool { return !m.Leader })
	if i >= 0 {
		return left[i], nil
	}
	if len(members) > 1 {
		to := successor(members, done)
		return left[0], &to
	}
	return left[0], nil
}

// successor is the member the leader hands its leadership to before it
// restarts: the last voter other than the leader that the change has
// reached already (done), else the last other voter.
func successor(members []Member, done func(Member) bool) Member {
	to := members[0]
	for _, m := range members {
		if !m.Leader && !m.Learner && (to.Leader || done(m)) {
			to = m
		}
	}
	return to
}

// skew says why the members cannot move from version from to version to;
// empty when they can: same version, a later patch, or the next minor.
func skew(from, to string) string {
	f, okf := etcdv1beta2.ParseVersion(from)
	t, okt := etcdv1beta2.ParseVersion(to)
	switch {
	case !okf || !okt:
		return fmt.Sprintf("Cannot compare the members' version %q with spec.version %q", from, to)
	case t.Major != f.Major:
		return fmt.Sprintf("spec.version %s changes the major version of the members (%s)", to, from)
	case t.Minor < f.Minor || (t.Minor == f.Minor && t.Patch < f.Patch):
		return fmt.Sprintf("spec.version %s is older than the members' version %s: etcd is not downgraded", to, from)
	case t.Minor > f.Minor+1:
		return fmt.Sprintf("spec.version %s skips a minor version from the members' %s: upgrade one minor version at a time", to, from)
	case f.Major == 3 && f.Minor == 5 && t.Minor == 6 && f.Patch < MinPatchBefore36:
		return fmt.Sprintf("spec.version %s needs every member at 3.5.%d or later first (etcd issue 19557: a member promoted from a learner before 3.5.20 reverts to a learner in 3.6), and the members run %s: set spec.version to the latest 3.5 patch, then to %s",
			to, MinPatchBefore36, from, to)
	}
	return ""
}

// MinPatchBefore36 is the lowest 3.5 patch a cluster may move to 3.6 from:
// before 3.5.20, etcd did not persist a learner's promotion in its v3
// store, so a member the operator added as a learner could come back from
// the upgrade as a learner again, and a cluster with two such members
// fails to start at all (etcd issue 19557). etcd asks for the latest 3.5
// patch before 3.6; 3.5.24 also fixes that membership spreading through a
// snapshot from an older member (etcd issue 20793).
const MinPatchBefore36 = 20

// lowestVersion is the lowest version the members report; empty when
// none reports one.
func lowestVersion(members []Member) string {
	versions := make([]string, 0, len(members))
	for _, m := range members {
		versions = append(versions, m.Version)
	}
	return etcdv1beta2.LowestVersion(versions)
}

// freeName is the name of the lowest ordinal no member has.
func freeName(cluster string, members []Member) string {
	used := map[int]bool{}
	for _, m := range members {
		if o, ok := Ordinal(cluster, m.Name); ok {
			used[o] = true
		}
	}
	n := 0
	for used[n] {
		n++
	}
	return MemberName(cluster, n)
}

// compareNames orders members by ordinal, names that are not the
// cluster's members last, by name.
func compareNames(cluster, a, b string) int {
	oa, okA := Ordinal(cluster, a)
	ob, okB := Ordinal(cluster, b)
	switch {
	case okA && okB:
		return oa - ob
	case okA:
		return -1
	case okB:
		return 1
	}
	return strings.Compare(a, b)
}
