package etcdcluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/app-operator/app-operator/api/switchover"
)

// SwitchoverRefusal is a request to move the leadership that the planner
// refuses, and why: it is answered at once rather than held, so that the
// person who made it knows.
type SwitchoverRefusal struct {
	// Target is the member asked for.
	Target string
	switchover.Refusal
}

// Message names the annotation, the target and why.
func (r SwitchoverRefusal) Message(leader string) string {
	return fmt.Sprintf("the %s annotation asks to move the leadership from %s to %s, which is %s: %s; nothing was changed",
		switchover.Annotation, leader, r.Target, r.Why, r.Detail)
}

// requestedMove answers o.Switchover, the request to move the leadership,
// once the cluster has no other step to take (d, Next's answer, takes
// none): a MoveLeader to the target, or d with the refusal. A target must
// be a started voting member that is healthy. For "any", it is the first
// such member by name, as a roll hands the leadership on.
func requestedMove(d Decision, o Observed) Decision {
	if o.Switchover == "" || d.Failure || d.Action.Kind != None || !o.Reachable {
		return d
	}
	members := slices.Clone(o.Members)
	slices.SortFunc(members, func(a, b Member) int { return compareNames(o.Cluster, a.Name, b.Name) })
	i := slices.IndexFunc(members, func(m Member) bool { return m.Leader })
	if i < 0 {
		d.Refusal = &SwitchoverRefusal{Target: o.Switchover, Refusal: switchover.Refusal{Why: switchover.NotHealthy, Detail: "the cluster has no leader"}}
		return d
	}
	leader := members[i].Name
	var target Member
	if o.Switchover == switchover.Any {
		i := slices.IndexFunc(members, func(m Member) bool { return !m.Leader && whyNotLeader(m) == nil })
		if i < 0 {
			d.Refusal = &SwitchoverRefusal{Target: o.Switchover, Refusal: switchover.Refusal{Why: switchover.NotHealthy,
				Detail: "no other voting member is started and healthy"}}
			return d
		}
		target = members[i]
	} else {
		i := slices.IndexFunc(members, func(m Member) bool { return m.Name == o.Switchover })
		if i < 0 {
			var names []string
			for _, m := range members {
				names = append(names, m.Name)
			}
			d.Refusal = &SwitchoverRefusal{Target: o.Switchover, Refusal: switchover.Refusal{Why: switchover.NotAMember,
				Detail: "the members are " + strings.Join(names, ", ")}}
			return d
		}
		target = members[i]
		if target.Leader {
			d.Refusal = &SwitchoverRefusal{Target: o.Switchover, Refusal: switchover.Refusal{Why: switchover.AlreadyPrimary, Detail: "it is the leader now"}}
			return d
		}
		if r := whyNotLeader(target); r != nil {
			d.Refusal = &SwitchoverRefusal{Target: o.Switchover, Refusal: *r}
			return d
		}
	}
	return Decision{Action: Action{Kind: MoveLeader, Member: target.Name, ID: target.ID}, Reason: switchover.InProgress, Switchover: true,
		Message: fmt.Sprintf("Moving the leadership from %s to %s, as the %s annotation asks", leader, target.Name, switchover.Annotation)}
}

// whyNotLeader says why member m cannot take the leadership; nil when it
// can.
func whyNotLeader(m Member) *switchover.Refusal {
	switch {
	case !m.Started:
		return &switchover.Refusal{Why: switchover.NotInSync, Detail: "it has not started"}
	case m.Learner:
		return &switchover.Refusal{Why: switchover.NotInSync, Detail: "it is a learner, which does not vote"}
	case !m.Healthy:
		return &switchover.Refusal{Why: switchover.NotHealthy, Detail: "it does not answer, or knows no leader"}
	}
	return nil
}
