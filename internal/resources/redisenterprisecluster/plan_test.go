package redisenterprisecluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Nodes of the table: a healthy primary, a synced replica of it, and
// variations.
func primaryNode(name string, offset int64) Node {
	return Node{Name: name, Pod: PodReady, Current: true, RoleLabel: redisv1alpha1.RolePrimary, Answered: true, Primary: true, Offset: offset}
}

func replicaNode(name, of string, offset int64) Node {
	return Node{Name: name, Pod: PodReady, Current: true, RoleLabel: redisv1alpha1.RoleReplica, Answered: true, Follows: of, LinkUp: true, Offset: offset}
}

func with(n Node, f func(*Node)) Node { f(&n); return n }

func TestPlan(t *testing.T) {
	const p0, p1, p2 = "r-0", "r-1", "r-2"
	running := []Node{primaryNode(p0, 100), replicaNode(p1, p0, 100), replicaNode(p2, p0, 100)}
	tests := []struct {
		name     string
		recorded string
		nodes    []Node
		want     Decision
	}{
		{
			name:  "should wait for a node to answer before choosing the first primary",
			nodes: []Node{{Name: p0, Pod: PodNotReady}, {Name: p1, Pod: PodMissing}, {Name: p2, Pod: PodNotReady}},
			want:  Decision{Waiting: true, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should record the node that booted as the primary",
			nodes: []Node{with(primaryNode(p0, 0), func(n *Node) { n.RoleLabel = "" }), {Name: p1, Pod: PodNotReady}, {Name: p2, Pod: PodMissing}},
			want:  Decision{Action: Record, Target: p0, Primary: p0, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should promote the node furthest along when no node is a primary",
			nodes: []Node{replicaNode(p0, "", 10), replicaNode(p1, "", 30), replicaNode(p2, "", 20)},
			want:  Decision{Action: Promote, Target: p1, Primary: p1, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:     "should report Running with one primary and synced replicas",
			recorded: p0,
			nodes:    running,
			want:     Decision{Primary: p0, State: redisv1alpha1.StateRunning},
		},
		{
			name:     "should promote the replica with the highest offset when the primary's pod is gone",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, replicaNode(p1, p0, 90), replicaNode(p2, p0, 95)},
			want:     Decision{Action: Promote, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a terminating primary that still answers to stop",
			recorded: p0,
			nodes:    []Node{with(primaryNode(p0, 100), func(n *Node) { n.Pod = PodTerminating }), replicaNode(p1, p0, 100), replicaNode(p2, p0, 99)},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over once the terminating primary is silent",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodTerminating, RoleLabel: redisv1alpha1.RolePrimary}, replicaNode(p1, p0, 100), replicaNode(p2, p0, 99)},
			want:     Decision{Action: Promote, Target: p1, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:  "should not promote a replica before every node answers",
			nodes: []Node{{Name: p0, Pod: PodNotReady}, replicaNode(p1, p0, 0), replicaNode(p2, p0, 0)},
			want:  Decision{Waiting: true, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should record an existing primary rather than a replica further along",
			nodes: []Node{replicaNode(p0, p1, 50), primaryNode(p1, 40), {Name: p2, Pod: PodMissing}},
			want:  Decision{Action: Record, Target: p1, Primary: p1, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:     "should fail over when the primary does not answer",
			recorded: p0,
			nodes:    []Node{with(primaryNode(p0, 100), func(n *Node) { n.Answered = false }), replicaNode(p1, p0, 80), replicaNode(p2, p0, 99)},
			want:     Decision{Action: Promote, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should never promote a replica that is not ready",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, with(replicaNode(p1, p0, 200), func(n *Node) { n.Pod = PodNotReady }), replicaNode(p2, p0, 95)},
			want:     Decision{Action: Promote, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should report an error when the primary is down and no replica answers",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, {Name: p1, Pod: PodNotReady}, {Name: p2, Pod: PodReady}},
			want:     Decision{Primary: p0, Waiting: true, Failure: true, State: redisv1alpha1.StateError},
		},
		{
			name:     "should fence a stale primary that comes back",
			recorded: p1,
			nodes:    []Node{with(primaryNode(p0, 5), func(n *Node) { n.RoleLabel = "" }), primaryNode(p1, 100), replicaNode(p2, p1, 100)},
			want:     Decision{Action: Repoint, Target: p0, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should point a replica that follows the old primary at the new one",
			recorded: p1,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, primaryNode(p1, 100), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Repoint, Target: p2, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should label the pods with their roles",
			recorded: p1,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, with(primaryNode(p1, 100), func(n *Node) { n.RoleLabel = redisv1alpha1.RoleReplica }), replicaNode(p2, p1, 100)},
			want:     Decision{Action: Label, Labels: map[string]string{p1: redisv1alpha1.RolePrimary}, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a missing node",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), replicaNode(p1, p0, 100), {Name: p2, Pod: PodMissing}},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a replica whose link is down",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 0), func(n *Node) { n.LinkUp = false }), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should replace an old replica first in a rolling update",
			recorded: p0,
			nodes: []Node{with(primaryNode(p0, 100), func(n *Node) { n.Current = false }), replicaNode(p1, p0, 100),
				with(replicaNode(p2, p0, 100), func(n *Node) { n.Current = false })},
			want: Decision{Action: DeletePod, Target: p2, Primary: p0, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:     "should not replace a replica while another is not in sync",
			recorded: p0,
			nodes: []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 100), func(n *Node) { n.Pod = PodNotReady }),
				with(replicaNode(p2, p0, 100), func(n *Node) { n.Current = false })},
			want: Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:     "should hand the primary over last, to the current replica furthest along",
			recorded: p0,
			nodes:    []Node{with(primaryNode(p0, 100), func(n *Node) { n.Current = false }), replicaNode(p1, p0, 90), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:     "should fail over from a recorded primary that is beyond the nodes",
			recorded: "r-5",
			nodes:    []Node{replicaNode(p0, "r-5", 10), replicaNode(p1, "r-5", 10), replicaNode(p2, "r-5", 10)},
			want:     Decision{Action: Promote, Target: p0, Primary: p0, State: redisv1alpha1.StateInitializing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(3, tt.recorded, tt.nodes)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Decision{}, "Reason"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if got.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

// FuzzPlan plans the next step for clusters whose nodes are filled from
// the fuzz input, and checks the rules no step may break: a step acts on
// a node that answers, never promotes or hands over to a node behind
// another candidate, never deletes or repoints the recorded primary, keeps
// a primary once one is recorded, and replaces a pod only while every
// node is healthy.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{255, 3, 0, 9, 200, 17, 5, 5, 5, 1, 0, 128, 64, 32, 16, 8, 4, 2, 1})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		names := []string{"r-0", "r-1", "r-2", "r-3", "r-4"}
		want := 3 + 2*int(next()%2)
		recorded := ""
		if b := next(); b%6 < 5 {
			recorded = names[b%6]
		}
		nodes := make([]Node, 0, want)
		for i := range want {
			b, c, o := next(), next(), next()
			n := Node{
				Name:      names[i],
				Pod:       []PodState{PodMissing, PodTerminating, PodNotReady, PodReady}[b%4],
				Current:   b&4 != 0,
				Answered:  b&8 != 0,
				Primary:   b&16 != 0,
				LinkUp:    b&32 != 0,
				RoleLabel: []string{"", redisv1alpha1.RolePrimary, redisv1alpha1.RoleReplica}[c%3],
				Offset:    int64(o),
			}
			if f := int(c/3) % 6; f < len(names) && !n.Primary {
				n.Follows = names[f]
			}
			nodes = append(nodes, n)
		}
		d := Plan(want, recorded, nodes)
		byName := map[string]Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		if d.Reason == "" {
			t.Fatalf("%+v: no reason", d)
		}
		if recorded != "" && d.Primary == "" {
			t.Fatalf("recorded %s, decision %+v records no primary", recorded, d)
		}
		if d.Action != None && d.Action != Label {
			target, ok := byName[d.Target]
			if !ok || !target.Answered || target.Pod == PodMissing || target.Pod == PodTerminating {
				t.Fatalf("%s on %s, which does not answer: %+v", d.Action, d.Target, target)
			}
		}
		switch d.Action {
		case Promote, Handover:
			for _, n := range nodes {
				if n.Name != recorded && n.Answered && n.Pod == PodReady && (d.Action == Promote || n.Current) && n.Offset > byName[d.Target].Offset {
					t.Fatalf("%s to %s (offset %d), but %s is further along (offset %d)", d.Action, d.Target, byName[d.Target].Offset, n.Name, n.Offset)
				}
			}
			if d.Target == recorded {
				t.Fatalf("%s to the recorded primary %s", d.Action, recorded)
			}
		case Repoint:
			if d.Target == recorded || d.Primary != recorded {
				t.Fatalf("repointed %s at %s, recorded %s", d.Target, d.Primary, recorded)
			}
		case DeletePod:
			if d.Target == recorded {
				t.Fatalf("deleted the primary %s's pod", recorded)
			}
			for _, n := range nodes {
				if n.Pod != PodReady || !n.Answered || (n.Name != recorded && !n.LinkUp) {
					t.Fatalf("deleted %s while %s is not healthy: %+v", d.Target, n.Name, n)
				}
			}
		}
		if d.Failure && d.State != redisv1alpha1.StateError {
			t.Fatalf("failure in state %s", d.State)
		}
	})
}
