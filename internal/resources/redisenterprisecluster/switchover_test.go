package redisenterprisecluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
)

func TestPlanSwitchover(t *testing.T) {
	const p0, p1, p2 = "r-0", "r-1", "r-2"
	running := []Node{primaryNode(p0, 100), replicaNode(p1, p0, 100), replicaNode(p2, p0, 100)}
	set := func(i int, f func(*Node)) []Node {
		nodes := append([]Node(nil), running...)
		f(&nodes[i])
		return nodes
	}
	tests := []struct {
		name    string
		request string
		nodes   []Node
		// action and target of the step; why, the refusal (none when
		// empty).
		action Action
		target string
		why    string
	}{
		{name: "should hand over to the named replica in sync", request: p2, nodes: running, action: Handover, target: p2},
		{name: "should hand over to the replica furthest along for any", request: switchover.Any,
			nodes: set(1, func(n *Node) { n.Offset = 90 }), action: Handover, target: p2},
		{name: "should not pick a replica on a cordoned node for any", request: switchover.Any,
			nodes: set(1, func(n *Node) { n.Cordoned = true }), action: Handover, target: p2},
		{name: "should refuse a node that is not a member", request: "r-7", nodes: running, why: switchover.NotAMember},
		{name: "should refuse the primary itself", request: p0, nodes: running, why: switchover.AlreadyPrimary},
		{name: "should refuse a replica whose pod is not ready", request: p1,
			nodes: set(1, func(n *Node) { n.Pod = PodNotReady }), action: None, why: switchover.NotHealthy},
		{name: "should refuse a replica that does not answer", request: p1,
			nodes: set(1, func(n *Node) { n.Answered = false }), why: switchover.NotHealthy},
		{name: "should refuse a replica whose link is down", request: p1,
			nodes: set(1, func(n *Node) { n.LinkUp, n.Streaming = false, false }), why: switchover.NotInSync},
		{name: "should repoint a replica that follows another node before answering", request: p1,
			nodes: set(1, func(n *Node) { n.Follows = p2 }), action: Repoint, why: ""},
		{name: "should refuse a replica the primary has not heard from", request: p1,
			nodes: set(1, func(n *Node) { n.Acked = false }), why: switchover.Behind},
		{name: "should refuse any when no replica is in sync", request: switchover.Any,
			nodes: set(1, func(n *Node) { n.Acked = false })[:2], why: switchover.NotInSync},
		{name: "should take no step without a request", nodes: running},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Observation{Want: len(tt.nodes), Recorded: p0, Nodes: tt.nodes, Settled: true, FailoverAfter: window, Switchover: tt.request})
			if d.Action != tt.action || d.Target != tt.target {
				t.Fatalf("step %s %s (%s), want %s %s", d.Action, d.Target, d.Message, tt.action, tt.target)
			}
			if got := d.Action == Handover; got != d.Switchover {
				t.Errorf("Switchover = %v on %s", d.Switchover, d.Action)
			}
			var why string
			if d.Refusal != nil {
				why = d.Refusal.Why
			}
			if diff := cmp.Diff(tt.why, why); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if d.Switchover && d.Primary != tt.target {
				t.Errorf("primary after the step %s, want %s", d.Primary, tt.target)
			}
		})
	}
}

// A request is held while the cluster has something else to do first: it
// is neither taken nor refused.
func TestPlanSwitchoverWaitsForTheRoles(t *testing.T) {
	nodes := []Node{primaryNode("r-0", 100), replicaNode("r-1", "r-0", 100), with(replicaNode("r-2", "r-0", 100), func(n *Node) { n.RoleLabel = "" })}
	d := Plan(Observation{Want: 3, Recorded: "r-0", Nodes: nodes, Settled: true, Switchover: "r-1"})
	if d.Action != Label || d.Refusal != nil || d.Switchover {
		t.Fatalf("got %s (refusal %v), want the labels first", d.Action, d.Refusal)
	}
	d = Plan(Observation{Want: 3, Recorded: "r-0", Nodes: nodes[:2], Settled: true, Switchover: "r-1"})
	if d.Action != None || !d.Waiting || d.Refusal != nil {
		t.Fatalf("got %s (refusal %v), want a wait for the third node", d.Action, d.Refusal)
	}
}

func TestSwitchoverRefusalMessageNamesTheAnnotationAndTheTarget(t *testing.T) {
	d := Plan(Observation{Want: 3, Recorded: "r-0", Settled: true, Switchover: "r-1",
		Nodes: []Node{primaryNode("r-0", 1), with(replicaNode("r-1", "r-0", 1), func(n *Node) { n.Acked = false }), replicaNode("r-2", "r-0", 1)}})
	if d.Refusal == nil {
		t.Fatal("not refused")
	}
	want := "the app-operator/switchover annotation asks to move the primary r-0 to r-1, which is behind: it has not been in sync with the primary r-0 within the last few seconds; nothing was changed"
	if got := d.Refusal.Message("r-0"); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
	if d.State != redisv1alpha1.StateInitializing {
		t.Errorf("state %s", d.State)
	}
}
