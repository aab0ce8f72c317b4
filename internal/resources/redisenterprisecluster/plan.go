package redisenterprisecluster

import (
	"cmp"
	"fmt"
	"slices"

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
	// Answered is whether Redis answered INFO replication; the fields
	// below are only meaningful when it did.
	Answered bool
	// Primary is whether Redis says it is a primary (role:master).
	Primary bool
	// Follows is, for a replica, the node it replicates ("" when its
	// primary is no node of the cluster).
	Follows string
	// LinkUp is, for a replica, whether its link to its primary is up and
	// in sync.
	LinkUp bool
	// Offset is the node's replication offset.
	Offset int64
}

// Action is the kind of step the planner chooses.
type Action string

// The steps.
const (
	// None: nothing to do now (converged, or waiting).
	None Action = ""
	// Promote makes Target a primary (REPLICAOF NO ONE) and records it.
	Promote Action = "Promote"
	// Record records Target, already a primary, as the primary.
	Record Action = "Record"
	// Repoint makes Target a replica of Primary (REPLICAOF), fencing it
	// when it claims to be a primary.
	Repoint Action = "Repoint"
	// Label sets RoleLabel on the pods of Labels.
	Label Action = "Label"
	// DeletePod deletes Target's pod, for the StatefulSet to recreate it
	// from the current template.
	DeletePod Action = "DeletePod"
	// Handover pauses writes on Primary, waits for Target to reach its
	// offset, promotes Target, makes Primary its replica and records
	// Target.
	Handover Action = "Handover"
)

// Decision is the one next step, and what the cluster's state is.
type Decision struct {
	Action Action
	// Target is the node the action is about.
	Target string
	// Primary is the primary after the step: the one to record in status.
	Primary string
	// Labels are the role labels to set, by pod (for Label).
	Labels map[string]string
	// Reason explains the step, or why there is none.
	Reason string
	// Waiting is set when no step can be taken until something changes.
	Waiting bool
	// Failure is set when the cluster has no primary and no node can be
	// made one.
	Failure bool
	// State is the cluster's state.
	State redisv1alpha1.ClusterState
}

// Plan returns the one next step for a cluster of want nodes whose nodes
// are nodes (in ordinal order, one per pod the cluster should have) and
// whose recorded primary is recorded.
//
// The rules, in order: without a recorded primary, elect one (a node
// already primary, else the one with the highest offset). When the
// recorded primary's pod is gone, not ready, terminating or silent, or it
// no longer says it is a primary, promote the node with the highest
// offset among those that answer: the replicas only ever hold what the
// primary sent, and the one furthest along holds every write that any
// replica acknowledged. With a healthy primary, fence every other node
// that claims to be a primary or follows another, one at a time; label
// the pods; then roll the pods that run an old template, replicas first,
// each only while every node is healthy, and the primary last after a
// handover to a synced replica.
func Plan(want int, recorded string, nodes []Node) Decision {
	answering := slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool {
		return !n.Answered || n.Pod == PodMissing || n.Pod == PodTerminating
	})
	if recorded == "" {
		return elect(answering, nodes)
	}
	i := slices.IndexFunc(nodes, func(n Node) bool { return n.Name == recorded })
	var primary Node
	if i >= 0 {
		primary = nodes[i]
	} else {
		primary = Node{Name: recorded, Pod: PodMissing}
	}
	if primary.Pod == PodTerminating && primary.Answered {
		// Redis, told to stop, pauses writes and sends its replicas what
		// they lack before it exits: promote once it has.
		return waiting(Decision{Primary: recorded, State: redisv1alpha1.StateInitializing},
			fmt.Sprintf("waiting for the primary %s to stop: its pod is terminating", recorded))
	}
	if !healthyPrimary(primary) {
		return failover(primary, answering)
	}
	d := Decision{Primary: recorded, State: redisv1alpha1.StateInitializing}
	for _, n := range answering {
		if n.Name == recorded {
			continue
		}
		if n.Primary {
			d.Action, d.Target, d.Reason = Repoint, n.Name, fmt.Sprintf("fenced %s, a stale primary: it is now a replica of %s", n.Name, recorded)
			return d
		}
		if n.Follows != recorded {
			d.Action, d.Target, d.Reason = Repoint, n.Name, fmt.Sprintf("pointed %s at the primary %s", n.Name, recorded)
			return d
		}
	}
	if labels := wrongLabels(nodes, recorded); len(labels) > 0 {
		d.Action, d.Labels, d.Reason = Label, labels, "labelled the pods with their roles"
		return d
	}
	if len(nodes) < want {
		return waiting(d, fmt.Sprintf("%d of %d nodes exist", len(nodes), want))
	}
	var unsynced []string
	for _, n := range nodes {
		if n.Name != recorded && (n.Pod != PodReady || !n.Answered || !n.LinkUp) {
			unsynced = append(unsynced, n.Name)
		}
	}
	rolling := slices.ContainsFunc(nodes, outdated)
	if rolling {
		d.State = redisv1alpha1.StateRunningRollingUpdate
	}
	if len(unsynced) > 0 {
		return waiting(d, fmt.Sprintf("waiting for %v to be ready and in sync with the primary %s", unsynced, recorded))
	}
	if !rolling {
		d.State, d.Reason = redisv1alpha1.StateRunning, fmt.Sprintf("%s is the primary of %d synced replicas", recorded, len(nodes)-1)
		return d
	}
	for _, n := range nodes {
		if n.Name != recorded && !n.Current {
			d.Action, d.Target, d.Reason = DeletePod, n.Name, fmt.Sprintf("replaced the replica %s with the new template", n.Name)
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
	d.Reason = fmt.Sprintf("handed the primary over from %s to %s, to replace %s", recorded, target.Name, recorded)
	return d
}

// outdated reports whether n's pod exists and runs an old template.
func outdated(n Node) bool { return n.Pod != PodMissing && !n.Current }

func healthyPrimary(n Node) bool {
	return n.Pod == PodReady && n.Answered && n.Primary
}

// elect chooses the first primary: the node furthest along of those that
// already are primaries (the operator may have lost its record), else,
// once every node answers, the node furthest along.
func elect(answering, nodes []Node) Decision {
	d := Decision{State: redisv1alpha1.StateBootstrappingFirstPod}
	primaries := slices.DeleteFunc(slices.Clone(answering), func(n Node) bool { return !n.Primary })
	if len(primaries) == 0 && len(answering) < len(nodes) {
		return waiting(d, fmt.Sprintf("waiting for every node to answer (%d of %d do)", len(answering), len(nodes)))
	}
	if len(primaries) > 0 {
		answering = primaries
	}
	n, ok := best(answering)
	if !ok {
		return waiting(d, "waiting for a node to answer")
	}
	d.Target, d.Primary = n.Name, n.Name
	if n.Primary {
		d.Action, d.Reason = Record, fmt.Sprintf("recorded %s as the primary", n.Name)
	} else {
		d.Action, d.Reason = Promote, fmt.Sprintf("promoted %s, the node furthest along, to primary", n.Name)
	}
	return d
}

// failover promotes the answering node furthest along, other than the
// failed primary.
func failover(primary Node, answering []Node) Decision {
	d := Decision{Primary: primary.Name, State: redisv1alpha1.StateInitializing}
	candidates := slices.DeleteFunc(slices.Clone(answering), func(n Node) bool { return n.Name == primary.Name || n.Pod != PodReady })
	n, ok := best(candidates)
	if !ok {
		d.Failure, d.Waiting, d.State = true, true, redisv1alpha1.StateError
		d.Reason = fmt.Sprintf("the primary %s is %s and no other node answers", primary.Name, describe(primary))
		return d
	}
	d.Action, d.Target, d.Primary = Promote, n.Name, n.Name
	d.Reason = fmt.Sprintf("promoted %s (offset %d) to primary: the primary %s is %s", n.Name, n.Offset, primary.Name, describe(primary))
	return d
}

func describe(n Node) string {
	switch {
	case n.Pod == PodMissing:
		return "gone"
	case n.Pod == PodTerminating:
		return "terminating"
	case n.Pod == PodNotReady:
		return "not ready"
	case !n.Answered:
		return "not answering"
	case !n.Primary:
		return "no longer a primary"
	}
	return "healthy"
}

// best returns the node furthest along: the highest offset, then a node
// that already is a primary, then the lowest ordinal (the first).
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
	d.Action, d.Target, d.Waiting, d.Reason = None, "", true, reason
	return d
}
