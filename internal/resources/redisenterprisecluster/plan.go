package redisenterprisecluster

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// PodState is what Kubernetes says of a node's pod.
type PodState string

// The pod states the planner tells apart.
const (
	PodMissing     PodState = "Missing"
	PodTerminating PodState = "Terminating"
	PodNotReady    PodState = "NotReady"
	PodReady       PodState = "Ready"
)

// Node is what the operator saw of one Redis node in a pass.
type Node struct {
	// Name is the node's pod.
	Name string
	// Pod is the state of its pod.
	Pod PodState
	// Current is whether the pod runs the StatefulSet's current template.
	Current bool
	// RoleLabel is the pod's RoleLabel ("" when it has none).
	RoleLabel string
	// Busy is whether Redis answered BUSY: it runs a script past its busy
	// threshold and answers nothing else until the script ends or is
	// killed. A busy node has not Answered.
	Busy bool
	// Answered is whether Redis answered INFO; the fields below are only
	// meaningful when it did.
	Answered bool
	// Primary is whether Redis says it is a primary (role:master).
	Primary bool
	// Follows is, for a replica, the node it replicates ("" when its
	// primary is no node of the cluster).
	Follows string
	// LinkUp is, for a replica, whether its link to its primary is up and
	// in sync.
	LinkUp bool
	// Streaming is, for a replica, whether its primary sent it something
	// within the last few seconds: the primary is alive, whatever the
	// operator can reach.
	Streaming bool
	// Acked is, for a replica, whether the primary it follows says the
	// replica acknowledged its stream within the last few seconds: the
	// primary counts it for WAIT and min-replicas-to-write.
	Acked bool
	// Offset is the node's replication offset, as it answers now.
	Offset int64
	// Position is how far the node got in the history of writes: what an
	// election compares.
	Position Position
	// Stranded, when set, says why the node's pod cannot be scheduled
	// again: its volume is local to a node that is gone or cordoned.
	Stranded string
	// Cordoned is whether the node's pod runs on a cordoned Kubernetes
	// node: one being drained, whose pods are about to be evicted.
	Cordoned bool
	// TLS is whether the node's pod mounts the certificate of spec.tls: it
	// serves TLS alone, and reaches its primary with TLS or without, as
	// its tls-replication says (Link). A node without it reaches only a
	// primary without it.
	TLS bool
	// Link is, for a replica that serves TLS and whose link is down, how
	// it reaches its primary; LinkUnknown otherwise.
	Link Link
	// StaleConfig are the parameters of spec.redisConfig that Redis takes
	// at run time and that the node, answering, reports at another value
	// than the spec's (leaving out values it refused before), sorted.
	StaleConfig []string
}

// Link is how a replica reaches its primary.
type Link string

// The links.
const (
	LinkUnknown Link = ""
	LinkPlain   Link = "plain"
	LinkTLS     Link = "tls"
)

// wrongLink reports whether n, a replica that serves TLS, reaches its
// primary in another scheme than the primary serves: its link never comes
// up until it is pointed at the primary again.
func wrongLink(n, primary Node) bool {
	return n.TLS && n.Link != LinkUnknown && (n.Link == LinkTLS) != primary.TLS
}

// cannotFollow reports whether n, a node without the certificate, follows
// a primary that serves TLS alone: it cannot sync until its pod is made
// again from the current template, which mounts it (a cluster on its way
// to TLS, after its primary was handed over to a node that serves TLS).
func cannotFollow(n, primary Node) bool {
	return !n.TLS && primary.TLS && !n.Current
}

// Action is the kind of step the planner chooses.
type Action string

// The steps.
const (
	// None: nothing to do now (converged, or waiting).
	None Action = ""
	// Promote makes Target a primary (REPLICAOF NO ONE), records it and
	// points the nodes of Repoint at it.
	Promote Action = "Promote"
	// Failover fences the failed primary Fence (its pod's role label
	// removed; where it answers, writes paused and made a replica), then
	// promotes Target, records it and points the nodes of Repoint at it.
	Failover Action = "Failover"
	// Record records Target, already a primary, as the primary.
	Record Action = "Record"
	// Repoint makes the nodes of Repoint replicas of Primary (REPLICAOF),
	// fencing those that claim to be primaries.
	Repoint Action = "Repoint"
	// Label sets RoleLabel on the pods of Labels.
	Label Action = "Label"
	// DeletePod deletes Target's pod, for the StatefulSet to recreate it
	// from the current template.
	DeletePod Action = "DeletePod"
	// Handover has Primary fail over to Target (FAILOVER TO: writes
	// paused until Target reaches its offset, then Primary its replica
	// and Target the primary, or no change when Target does not catch up
	// in time) and records Target.
	Handover Action = "Handover"
	// KillScript sends SCRIPT KILL to Target, a busy primary.
	KillScript Action = "KillScript"
	// Configure sets the parameters of spec.redisConfig that Target runs
	// at other values (Node.StaleConfig) with CONFIG SET, and reads them
	// back with CONFIG GET.
	Configure Action = "Configure"
	// ReplaceVolume deletes the claim and the pod of Target, a replica
	// whose volume is local to a node that is gone or cordoned: the
	// StatefulSet makes both again on a node that takes pods, where the
	// replica syncs from the primary anew.
	ReplaceVolume Action = "ReplaceVolume"
)

// Decision is the one next step, and what the cluster's state is.
type Decision struct {
	Action Action
	// Target is the node the action is about.
	Target string
	// Primary is the primary after the step: the one to record in status.
	Primary string
	// Fence is the failed primary a Failover fences before it promotes.
	Fence string
	// Repoint are the nodes to make replicas of Primary.
	Repoint []string
	// Labels are the role labels to set, by pod (for Label).
	Labels map[string]string
	// Message explains the step, or why there is none.
	Message string
	// Cause is the condition reason behind the step (PrimaryBusy for a
	// KillScript) or behind the wait (why a failover is held back).
	Cause string
	// Waiting is set when no step can be taken until something changes.
	Waiting bool
	// Failure is set when the cluster has no primary and no node can be
	// made one.
	Failure bool
	// Switchover is set on the Handover that Observation.Switchover asks
	// for; Refusal, when that request is refused (the step is then
	// whatever else the cluster needs).
	Switchover bool
	Refusal    *SwitchoverRefusal
	// State is the cluster's state.
	State redisv1alpha1.ClusterState
}

// ChangeReason is why the step d moves the primary, for
// status.primaryHistory: Switchover for the handover a switchover request
// asked for, Handover for another, Failover for any other step (a
// promotion after the primary was lost).
func (d Decision) ChangeReason() string {
	switch {
	case d.Action == Handover && d.Switchover:
		return redisv1alpha1.PrimaryChangeSwitchover
	case d.Action == Handover:
		return redisv1alpha1.PrimaryChangeHandover
	}
	return redisv1alpha1.PrimaryChangeFailover
}

// Observation is what the planner decides from.
type Observation struct {
	// Want is the number of nodes the spec asks for.
	Want int
	// Recorded is the primary recorded in status ("" when none is).
	Recorded string
	// Nodes are the nodes, in ordinal order, one per pod the cluster
	// should have.
	Nodes []Node
	// PrimaryDownFor is how long the recorded primary has been seen down
	// (its pod gone or not ready, or Redis silent); zero while it is not.
	PrimaryDownFor time.Duration
	// FailoverAfter is how long a primary must be down before a failover.
	FailoverAfter time.Duration
	// Settled is whether the StatefulSet controller has seen the
	// StatefulSet's latest spec, so that Node.Current is up to date.
	Settled bool
	// SafetyOnly holds back every step but a failover and a fence (a
	// repoint): a child of the cluster could not be applied.
	SafetyOnly bool
	// Chosen is the node a person chose to elect (ElectAnnotation) where
	// the operator cannot prove which node holds every acknowledged write;
	// it is not consulted otherwise.
	Chosen string
	// Switchover is the node a switchover request not yet handled moves
	// the primary to (switchover.Any for the best one); "" when there is
	// none. It is answered once the primary is healthy, every node has
	// its role and the StatefulSet is settled.
	Switchover string
}

// Plan returns the one next step for the observed cluster in.
//
// The rules, in order. Without a recorded primary, elect one: a node
// already primary, else, once every node answers, the one furthest along
// (every node boots as a replica: none is ever a primary of its own
// accord). When the recorded primary is not a healthy primary, fail over,
// but only once it is certain that it takes no write: it says it is a
// replica (as a node that restarted does), or it has been down for
// FailoverAfter while no replica still streams from it; and only once every
// other node answers, so that the node furthest along, which holds every
// write any replica acknowledged, is known. A failover fences the old
// primary before it promotes. With a healthy primary, fence every other
// node that claims to be a primary or follows another; give a replica
// whose volume is stranded on a node that is gone or cordoned a new one;
// label the pods;
// then roll the pods that run an old template, replicas first, each only
// while every node is healthy (a replica down on an old template at once;
// one that does not serve TLS is not waited for while it cannot follow a
// primary that does), and the primary last after a handover to a synced
// replica. A primary whose Kubernetes node is cordoned (a drain is
// coming) is handed over to the replica furthest along of those in sync on
// a node that is not, without waiting for a replica that is away (its pod
// evicted, or stranded where its volume is): only one that answers while
// behind holds the handover back. A primary beyond the nodes wanted (a
// scale-in below its ordinal) is handed over, once every node is in sync,
// to a node that stays. A primary that answers BUSY runs a script past Redis's busy
// threshold: within the window, the step is SCRIPT KILL (a read-only
// script dies, and the primary is back; one that wrote cannot be killed,
// and the failover follows). With SafetyOnly, only a failover or a fence
// is taken.
func Plan(in Observation) Decision {
	d := plan(in)
	if in.SafetyOnly && d.Action != None && d.Action != Failover && d.Action != Repoint {
		return waiting(Decision{Primary: in.Recorded, State: d.State},
			fmt.Sprintf("only a failover or a fence while a child cannot be applied; held back: %s %s", d.Action, d.Target))
	}
	return d
}

func plan(in Observation) Decision {
	nodes, recorded := in.Nodes, in.Recorded
	answering := slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool {
		return !n.Answered || n.Pod == PodMissing || n.Pod == PodTerminating
	})
	if recorded == "" {
		return elect(in, answering)
	}
	i := slices.IndexFunc(nodes, func(n Node) bool { return n.Name == recorded })
	var primary Node
	if i >= 0 {
		primary = nodes[i]
	} else {
		primary = Node{Name: recorded, Pod: PodMissing}
	}
	if primary.Pod == PodTerminating && primary.Answered && primary.Primary {
		// Redis, told to stop, pauses writes and sends its replicas what
		// they lack before it exits: fail over once it has.
		return waiting(Decision{Primary: recorded, State: redisv1alpha1.StateInitializing},
			fmt.Sprintf("waiting for the primary %s to stop: its pod is terminating", recorded))
	}
	if !healthyPrimary(primary) {
		return failover(in, primary)
	}
	d := Decision{Primary: recorded, State: redisv1alpha1.StateInitializing}
	var stale, astray []string
	for _, n := range answering {
		switch {
		case n.Name == recorded:
		case n.Primary:
			stale = append(stale, n.Name)
		case n.Follows != recorded, wrongLink(n, primary):
			astray = append(astray, n.Name)
		}
	}
	// Another primary that is not behind the recorded one (a handover
	// stopped between its promotion and its demotion, writes taken on both
	// since) holds writes the recorded one lacks: fencing it would discard
	// them. Neither is chosen but by a person.
	if diverged := divergedPrimaries(answering, primary); len(diverged) > 0 {
		contenders := append([]Node{primary}, diverged...)
		n, ok := chosen(contenders, in.Chosen)
		if !ok {
			return held(d, fmt.Sprintf("%s, like the recorded primary %s (%s), claim to be primaries, and their histories are not behind it: %s",
				names(diverged), recorded, primary.Position, positions(diverged)), contenders)
		}
		if n.Name != recorded {
			d.Action, d.Target, d.Primary, d.Fence = Failover, n.Name, n.Name, recorded
			d.Repoint = others(answering, n.Name)
			d.Message = fmt.Sprintf("fenced %s and made %s, chosen by %s, the primary", recorded, n.Name, redisv1alpha1.ElectAnnotation)
			return d
		}
	}
	if len(stale)+len(astray) > 0 {
		d.Action, d.Repoint = Repoint, append(stale, astray...)
		d.Message = fmt.Sprintf("pointed %v at the primary %s", d.Repoint, recorded)
		if len(stale) > 0 {
			d.Message = fmt.Sprintf("fenced %v, claiming to be primaries, and pointed %v at the primary %s", stale, d.Repoint, recorded)
		}
		return d
	}
	// A replica whose pod cannot come back where its data is. A primary
	// never is: the failover above comes first, from a replica in sync.
	if n, ok := strandedReplica(nodes, recorded); ok {
		d.Action, d.Target = ReplaceVolume, n.Name
		d.Message = fmt.Sprintf("gave the replica %s a new volume, as %s", n.Name, n.Stranded)
		return d
	}
	if labels := wrongLabels(nodes, recorded); len(labels) > 0 {
		d.Action, d.Labels, d.Message = Label, labels, "labelled the pods with their roles"
		return d
	}
	if len(nodes) < in.Want {
		return waiting(d, fmt.Sprintf("%d of %d nodes exist", len(nodes), in.Want))
	}
	if !in.Settled {
		return waiting(d, "waiting for the StatefulSet controller to take the new spec")
	}
	var requested bool
	if d, requested = requestedSwitchover(d, in, primary, answering); requested {
		return d
	}
	// A replica down on an old template holds nothing the roll keeps: it
	// is made again from the current one at once, rather than held until
	// every node is healthy, which it may never be on its old
	// configuration (the TLS of a cluster on its way to TLS, whose
	// certificate its pod does not mount).
	if n, ok := downOnOldTemplate(nodes, recorded); ok {
		d.Action, d.Target, d.State = DeletePod, n.Name, redisv1alpha1.StateRunningRollingUpdate
		d.Message = fmt.Sprintf("replaced the replica %s, down on an old template, with the new template", n.Name)
		return d
	}
	// A replica whose pod is ready and that answers, but is not in sync,
	// is behind: its link is down, or the primary, which pings it every
	// second, has sent it nothing for a few seconds, or has had no
	// acknowledgement from it (cut off from it, say, while its link has
	// not timed out yet).
	unsynced, behind := outOfSync(nodes, primary)
	rolling := slices.ContainsFunc(nodes, outdated)
	if rolling {
		d.State = redisv1alpha1.StateRunningRollingUpdate
	}
	if len(unsynced) > 0 {
		return notInSync(d, primary, nodes, answering, unsynced, behind)
	}
	var handedOver bool
	if d, handedOver = handover(d, in.Want, i, primary, nodes, answering); handedOver {
		return d
	}
	// Parameters Redis takes at run time, on every node that answers;
	// the primary first.
	if n, ok := staleConfig(primary, nodes); ok {
		d.Action, d.Target = Configure, n.Name
		d.Message = fmt.Sprintf("set %s of spec.redisConfig on %s", strings.Join(n.StaleConfig, ", "), n.Name)
		if !rolling {
			d.State = redisv1alpha1.StateRunning
		}
		return d
	}
	if !rolling {
		d.State = redisv1alpha1.StateRunning
		d.Message = cmp.Or(d.Message, fmt.Sprintf("%s is the primary of %d synced replicas", recorded, len(nodes)-1))
		return d
	}
	for _, n := range nodes {
		if n.Name != recorded && !n.Current {
			d.Action, d.Target, d.Message = DeletePod, n.Name, fmt.Sprintf("replaced the replica %s with the new template", n.Name)
			return d
		}
	}
	// Only the primary is left: hand over to the current replica furthest
	// along.
	target, ok := best(slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool { return n.Name == recorded || !n.Current }))
	if !ok {
		return waiting(d, "no current replica to hand the primary over to")
	}
	d.Action, d.Target, d.Primary = Handover, target.Name, target.Name
	d.Repoint = others(answering, recorded, target.Name)
	d.Message = fmt.Sprintf("handed the primary over from %s to %s, to replace %s", recorded, target.Name, recorded)
	return d
}

// notInSync is the step while the replicas unsynced are not all ready and
// in sync with the healthy primary, those of behind answering from a ready
// pod: wait for them, saying which are behind, unless a drain has begun
// on the primary's node and none is behind. Then a replica away (its pod
// evicted, or unable to come back where its volume is) does not hold the
// handover back.
func notInSync(d Decision, primary Node, nodes, answering []Node, unsynced, behind []string) Decision {
	if len(behind) == 0 && primary.Cordoned {
		if h, ok := handoverFromCordoned(d, primary, nodes, answering); ok {
			return h
		}
	}
	d = waiting(d, fmt.Sprintf("waiting for %v to be ready and in sync with the primary %s", unsynced, primary.Name))
	switch {
	case len(behind) > 0 && len(unsynced) == len(nodes)-1:
		d.Cause = redisv1alpha1.ReasonNoReplicaInSync
		d.Message = fmt.Sprintf("no replica is in sync with the primary %s (%v behind): a write that waits for a replica is not acknowledged", primary.Name, behind)
	case len(behind) > 0:
		d.Cause = redisv1alpha1.ReasonReplicaBehind
		d.Message = fmt.Sprintf("%v not in sync with the primary %s, which takes writes through the others", behind, primary.Name)
	}
	return d
}

// handover hands a healthy primary over, every node in sync, when it must
// go: scaled in below its ordinal i (the StatefulSet keeps its pod until
// it is handed over to the node furthest along of those that stay), or on
// a cordoned Kubernetes node, as a drain begins (see handoverFromCordoned;
// the primary's disruption budget holds its eviction until its pod is
// labelled a replica).
func handover(d Decision, want, i int, primary Node, nodes, answering []Node) (Decision, bool) {
	var target Node
	switch {
	case i >= want:
		stay := nodes[:want]
		target, _ = best(stay)
		d.Repoint = others(stay, target.Name)
		d.Message = fmt.Sprintf("handed the primary over from %s to %s: %s is beyond the %d nodes wanted", primary.Name, target.Name, primary.Name, want)
	case primary.Cordoned:
		return handoverFromCordoned(d, primary, nodes, answering)
	default:
		return d, false
	}
	d.Action, d.Target, d.Primary = Handover, target.Name, target.Name
	return d, true
}

// handoverFromCordoned hands the primary of a cordoned Kubernetes node over
// to the replica furthest along of those in sync with it on a node that is
// not cordoned. Writes pause on the primary until the target has caught up
// with it, so the target holds every write the primary acknowledged
// whatever the other replicas hold; the others, away or not, follow the
// new primary once they answer. When no replica in sync is on a node that
// is not cordoned, the primary stays, and d says why.
func handoverFromCordoned(d Decision, primary Node, nodes, answering []Node) (Decision, bool) {
	target, ok := best(slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool {
		return n.Name == primary.Name || n.Cordoned || n.Pod != PodReady || !n.Answered || n.Primary || n.Follows != primary.Name || !InSync(n)
	}))
	if !ok {
		d.Message = fmt.Sprintf("the node of the primary %s is cordoned, and no replica in sync with it is on a node that is not: the primary stays, its disruption budget holding its eviction", primary.Name)
		return d, false
	}
	d.Action, d.Target, d.Primary = Handover, target.Name, target.Name
	d.Repoint = others(answering, primary.Name, target.Name)
	d.Message = fmt.Sprintf("handed the primary over from %s to %s: the node of %s is cordoned", primary.Name, target.Name, primary.Name)
	return d, true
}

// outOfSync returns the replicas of primary that are not ready and in
// sync with it, and of those the ones behind: answering from a ready pod.
// A replica that cannot follow a primary that serves TLS until its pod is
// made again is neither: the roll does not wait for it.
func outOfSync(nodes []Node, primary Node) (unsynced, behind []string) {
	for _, n := range nodes {
		if n.Name == primary.Name || (n.Pod != PodMissing && n.Pod != PodTerminating && cannotFollow(n, primary)) {
			continue
		}
		if n.Pod != PodReady || !n.Answered || !InSync(n) {
			unsynced = append(unsynced, n.Name)
		}
		if n.Pod == PodReady && n.Answered && !InSync(n) {
			behind = append(behind, n.Name)
		}
	}
	return unsynced, behind
}

// downOnOldTemplate returns the first replica (not the primary recorded)
// whose pod runs an old template and is not ready while Redis is silent.
func downOnOldTemplate(nodes []Node, recorded string) (Node, bool) {
	for _, n := range nodes {
		if n.Name != recorded && n.Pod == PodNotReady && !n.Answered && !n.Busy && !n.Current {
			return n, true
		}
	}
	return Node{}, false
}

// strandedReplica returns the first node but the primary recorded whose
// volume is stranded on a node that is gone or cordoned.
func strandedReplica(nodes []Node, recorded string) (Node, bool) {
	for _, n := range nodes {
		if n.Name != recorded && n.Stranded != "" {
			return n, true
		}
	}
	return Node{}, false
}

// InSync reports whether a replica is in sync with its primary, both ways:
// its link up, something heard from the primary, and the primary's word
// that it heard from the replica, each within the last few seconds. After
// a cut heals, the two directions of the link resume apart (each side's
// TCP retransmits on its own backed-off timer).
func InSync(n Node) bool { return n.LinkUp && n.Streaming && n.Acked }

// outdated reports whether n's pod exists and runs an old template.
func outdated(n Node) bool { return n.Pod != PodMissing && !n.Current }

func healthyPrimary(n Node) bool {
	return n.Pod == PodReady && n.Answered && n.Primary
}

// elect chooses the first primary: the node furthest along of those that
// already are primaries (the operator may have lost its record), else,
// once every node answers, the node furthest along.
func elect(in Observation, answering []Node) Decision {
	nodes := in.Nodes
	d := Decision{State: redisv1alpha1.StateBootstrappingFirstPod}
	primaries := slices.DeleteFunc(slices.Clone(answering), func(n Node) bool { return !n.Primary })
	if len(primaries) == 0 && len(answering) < len(nodes) {
		return waiting(d, fmt.Sprintf("waiting for every node to answer (%d of %d do)", len(answering), len(nodes)))
	}
	candidates, all := answering, len(nodes)
	if len(primaries) > 0 {
		// Clients write to these: one is recorded as it is; of two or more
		// (the record lost mid-failover), one must hold the other's history.
		candidates, all = primaries, len(primaries)
	}
	if len(candidates) == 0 {
		return waiting(d, "waiting for a node to answer")
	}
	n, why := candidates[0], ""
	if len(candidates) > 1 || !n.Primary {
		n, why = furthest(candidates, all, "")
	}
	if why != "" {
		var ok bool
		if n, ok = chosen(candidates, in.Chosen); !ok {
			return held(d, why, candidates)
		}
	}
	d.Target, d.Primary = n.Name, n.Name
	if n.Primary {
		d.Action, d.Message = Record, fmt.Sprintf("recorded %s as the primary", n.Name)
	} else {
		d.Action, d.Message = Promote, fmt.Sprintf("promoted %s, the node furthest along (%s), to primary", n.Name, n.Position)
		d.Repoint = others(answering, n.Name, "")
	}
	return d
}

// failover replaces the failed primary with the node furthest along, once
// the primary certainly takes no write and every other node answers.
func failover(in Observation, primary Node) Decision {
	d := Decision{Primary: primary.Name, State: redisv1alpha1.StateInitializing}
	if primary.Busy && primary.Pod != PodMissing && primary.Pod != PodTerminating && in.PrimaryDownFor < in.FailoverAfter {
		// Alive, but answering nothing while a script runs: a read-only
		// script can be killed, as Sentinel does, and the primary is back
		// without a failover.
		d.Action, d.Target, d.Cause = KillScript, primary.Name, redisv1alpha1.ReasonPrimaryBusy
		d.Message = fmt.Sprintf("the primary %s answers BUSY, running a script past the busy threshold: sent SCRIPT KILL (a script that wrote cannot be killed, and a failover follows %s after the primary went silent)",
			primary.Name, in.FailoverAfter)
		return d
	}
	// A node that answers as a replica takes no write: it restarted (every
	// node boots as a replica) or was demoted.
	demoted := primary.Answered && !primary.Primary && primary.Pod != PodMissing
	if !demoted {
		var streaming []string
		for _, n := range in.Nodes {
			if n.Name != primary.Name && n.Answered && n.Follows == primary.Name && n.Streaming {
				streaming = append(streaming, n.Name)
			}
		}
		if len(streaming) > 0 {
			d = waiting(d, fmt.Sprintf("the primary %s is %s to the operator, but %v still stream from it: no failover", primary.Name, describe(primary), streaming))
			d.Cause = redisv1alpha1.ReasonPrimaryUnreachable
			return d
		}
		if in.PrimaryDownFor < in.FailoverAfter {
			d = waiting(d, fmt.Sprintf("the primary %s is %s (for %s): failing over after %s", primary.Name, describe(primary),
				in.PrimaryDownFor.Round(time.Second), in.FailoverAfter))
			d.Cause = redisv1alpha1.ReasonFailoverPending
			return d
		}
	}
	// The candidates are every node that answers, the failed primary too
	// when it answers as a replica (it restarted, or was fenced): what it
	// holds counts as much as any other's.
	var candidates, silent []Node
	for _, n := range in.Nodes {
		switch {
		case n.Answered && n.Pod != PodMissing && n.Pod != PodTerminating && (n.Name != primary.Name || demoted):
			candidates = append(candidates, n)
		case n.Name == primary.Name:
		default:
			silent = append(silent, n)
		}
	}
	// Every acknowledged write is on two nodes at least: one node away (the
	// failed primary, or, when it answers, another) leaves a copy on a
	// node that answers; two do not.
	away := len(silent)
	if !demoted {
		away++
	}
	if len(silent) > 0 && (away > 1 || len(candidates) == 0) {
		if len(candidates) == 0 {
			d.Failure, d.Waiting, d.State = true, true, redisv1alpha1.StateError
			d.Message = fmt.Sprintf("the primary %s is %s and no other node answers", primary.Name, describe(primary))
			return d
		}
		d = waiting(d, fmt.Sprintf("the primary %s is %s; a failover waits for %s to answer: it may hold acknowledged writes the others lack",
			primary.Name, describe(primary), names(silent)))
		d.Cause = redisv1alpha1.ReasonNodeSilent
		return d
	}
	if len(candidates) == 0 {
		d.Failure, d.Waiting, d.State = true, true, redisv1alpha1.StateError
		d.Message = fmt.Sprintf("the primary %s is %s and the cluster has no other node", primary.Name, describe(primary))
		return d
	}
	n, why := furthest(candidates, len(in.Nodes), primary.Name)
	if why != "" {
		var ok bool
		if n, ok = chosen(candidates, in.Chosen); !ok {
			return held(d, why, candidates)
		}
	}
	d.Target, d.Primary = n.Name, n.Name
	d.Repoint = others(candidates, n.Name, primary.Name)
	if n.Name == primary.Name {
		// It restarted holding the most: it is the primary again.
		d.Action = Promote
		d.Message = fmt.Sprintf("promoted %s again, the node furthest along (%s), after it restarted", n.Name, n.Position)
		return d
	}
	d.Action, d.Fence = Failover, primary.Name
	if primary.Answered && primary.Pod != PodMissing && primary.Pod != PodTerminating {
		// Fenced, and pointed at the new primary with the others.
		d.Repoint = append(d.Repoint, primary.Name)
	}
	d.Message = fmt.Sprintf("fenced %s (%s) and promoted %s (%s) to primary", primary.Name, describe(primary), n.Name, n.Position)
	return d
}

// chosen returns the candidate a person chose (ElectAnnotation: its name,
// a slash and the hold's ID), if it is one and the choice was made for
// this hold: one made for an earlier hold is not consulted.
func chosen(candidates []Node, choice string) (Node, bool) {
	name, id, _ := strings.Cut(choice, "/")
	i := slices.IndexFunc(candidates, func(n Node) bool { return n.Name == name })
	if i < 0 || id != holdID(candidates) {
		return Node{}, false
	}
	return candidates[i], true
}

// holdID names a hold by its candidates and their positions: it changes
// when any of them does.
func holdID(candidates []Node) string {
	h := fnv.New32a()
	for _, n := range candidates {
		fmt.Fprintf(h, "%s=%s;", n.Name, n.Position)
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// held is d waiting with the reason ElectionHeld: the operator cannot
// prove which node holds every acknowledged write, and does not guess.
func held(d Decision, why string, candidates []Node) Decision {
	d = waiting(d, fmt.Sprintf("no primary is elected: the operator cannot prove which node holds every acknowledged write: %s. "+
		"To elect one of %s, set the annotation %s to its name followed by /%s (e.g. %s/%s)",
		why, names(candidates), redisv1alpha1.ElectAnnotation, holdID(candidates), candidates[0].Name, holdID(candidates)))
	d.Cause = redisv1alpha1.ReasonElectionHeld
	return d
}

// divergedPrimaries returns the nodes but primary that claim to be
// primaries, whose histories are not behind primary's, and that a replica
// follows: those may have acknowledged writes primary lacks. One that no
// replica follows acknowledged nothing (a write waits for a replica).
func divergedPrimaries(nodes []Node, primary Node) []Node {
	var out []Node
	for _, n := range nodes {
		followed := slices.ContainsFunc(nodes, func(m Node) bool { return m.Follows == n.Name })
		if c, ok := n.Position.Compare(primary.Position); n.Name != primary.Name && n.Primary && followed && (!ok || c > 0) {
			out = append(out, n)
		}
	}
	return out
}

// others returns the names of nodes but the named ones.
func others(nodes []Node, but ...string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(but, n.Name) {
			out = append(out, n.Name)
		}
	}
	return out
}

func names(nodes []Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
}

func describe(n Node) string {
	switch {
	case n.Pod == PodMissing:
		return "gone"
	case n.Pod == PodTerminating:
		return "terminating"
	case n.Pod == PodNotReady:
		return "not ready"
	case n.Busy:
		return "busy running a script"
	case !n.Answered:
		return "not answering"
	case !n.Primary:
		return "no longer a primary"
	}
	return "healthy"
}

// best returns, of replicas that answer in the primary's history, the one
// furthest along: the highest offset, then a node that already is a
// primary, then the lowest ordinal (the first).
func best(nodes []Node) (Node, bool) {
	if len(nodes) == 0 {
		return Node{}, false
	}
	return slices.MaxFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmpBool(a.Primary, b.Primary))
	}), true
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// wrongLabels returns the role labels to set: primary on the recorded
// primary's pod, replica on the others (whose pods exist and are not
// terminating).
func wrongLabels(nodes []Node, recorded string) map[string]string {
	labels := map[string]string{}
	for _, n := range nodes {
		if n.Pod == PodMissing || n.Pod == PodTerminating {
			continue
		}
		want := redisv1alpha1.RoleReplica
		if n.Name == recorded {
			want = redisv1alpha1.RolePrimary
		}
		if n.RoleLabel != want {
			labels[n.Name] = want
		}
	}
	return labels
}

func waiting(d Decision, reason string) Decision {
	d.Action, d.Target, d.Waiting, d.Message = None, "", true, reason
	return d
}
