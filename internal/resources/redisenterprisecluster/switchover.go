package redisenterprisecluster

import (
	"fmt"
	"slices"

	"github.com/app-operator/app-operator/api/switchover"
)

// SwitchoverRefusal is a switchover request the planner refuses, and why:
// a request the cluster cannot take is answered at once rather than held,
// so that the person who made it knows.
type SwitchoverRefusal struct {
	// Target is the node asked for ("any" when none could be chosen).
	Target string
	switchover.Refusal
}

// Message names the annotation, the target and why.
func (r SwitchoverRefusal) Message(primary string) string {
	return fmt.Sprintf("the %s annotation asks to move the primary %s to %s, which is %s: %s; nothing was changed",
		switchover.Annotation, primary, r.Target, r.Why, r.Detail)
}

// requestedSwitchover answers the switchover request in.Switchover on a
// cluster whose primary is healthy and whose nodes have their roles: a
// handover to the target (FAILOVER TO, as a roll's last step), or a
// refusal when the target is not a node, is the primary, or is not a
// healthy replica in sync with the primary. For "any", the target is the
// replica furthest along of those in sync, as a roll's handover picks it.
// ok is false when there is no request.
func requestedSwitchover(d Decision, in Observation, primary Node, answering []Node) (Decision, bool) {
	if in.Switchover == "" {
		return d, false
	}
	target, refusal := switchoverTarget(in.Switchover, primary, in.Nodes)
	if refusal != nil {
		d.Refusal = refusal
		return d, false
	}
	d.Action, d.Target, d.Primary = Handover, target.Name, target.Name
	d.Repoint = others(answering, primary.Name, target.Name)
	d.Switchover = true
	d.Message = fmt.Sprintf("handed the primary over from %s to %s, as the %s annotation asks", primary.Name, target.Name, switchover.Annotation)
	return d, true
}

// switchoverTarget is the node a request for name (a node, or "any") moves
// the primary to, or why it cannot.
func switchoverTarget(name string, primary Node, nodes []Node) (Node, *SwitchoverRefusal) {
	if name == switchover.Any {
		target, ok := best(slices.DeleteFunc(slices.Clone(nodes), func(n Node) bool {
			return n.Name == primary.Name || n.Cordoned || whyNotTarget(n, primary) != nil
		}))
		if !ok {
			return Node{}, &SwitchoverRefusal{Target: name, Refusal: switchover.Refusal{Why: switchover.NotInSync,
				Detail: "no replica is healthy and in sync with the primary on a node that is not cordoned"}}
		}
		return target, nil
	}
	i := slices.IndexFunc(nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, &SwitchoverRefusal{Target: name, Refusal: switchover.Refusal{Why: switchover.NotAMember,
			Detail: fmt.Sprintf("the nodes are %s", names(nodes))}}
	}
	n := nodes[i]
	if n.Name == primary.Name {
		return Node{}, &SwitchoverRefusal{Target: name, Refusal: switchover.Refusal{Why: switchover.AlreadyPrimary,
			Detail: "it is the primary now"}}
	}
	if r := whyNotTarget(n, primary); r != nil {
		return Node{}, &SwitchoverRefusal{Target: name, Refusal: *r}
	}
	return n, nil
}

// whyNotTarget says why the replica n cannot take over from primary
// without losing a write or the cluster's service; nil when it can.
func whyNotTarget(n, primary Node) *switchover.Refusal {
	switch {
	case n.Pod != PodReady:
		return &switchover.Refusal{Why: switchover.NotHealthy, Detail: fmt.Sprintf("its pod is %s", describe(n))}
	case n.Busy || !n.Answered:
		return &switchover.Refusal{Why: switchover.NotHealthy, Detail: describe(n)}
	case n.Cordoned:
		return &switchover.Refusal{Why: switchover.NotHealthy, Detail: "its Kubernetes node is cordoned"}
	case n.Primary:
		return &switchover.Refusal{Why: switchover.NotInSync, Detail: "it claims to be a primary too"}
	case n.Follows != primary.Name || !n.LinkUp || wrongLink(n, primary) || cannotFollow(n, primary):
		return &switchover.Refusal{Why: switchover.NotInSync, Detail: fmt.Sprintf("its link to the primary %s is not up", primary.Name)}
	case !InSync(n):
		return &switchover.Refusal{Why: switchover.Behind, Detail: fmt.Sprintf("it has not been in sync with the primary %s within the last few seconds", primary.Name)}
	}
	return nil
}
