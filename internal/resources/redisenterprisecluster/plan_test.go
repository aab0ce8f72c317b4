package redisenterprisecluster

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Nodes of the table: a healthy primary, a synced replica of it, and
// variations.
func primaryNode(name string, offset int64) Node {
	return Node{Name: name, Pod: PodReady, Current: true, RoleLabel: redisv1alpha1.RolePrimary, Answered: true, Primary: true, Offset: offset, Position: live(offset)}
}

func replicaNode(name, of string, offset int64) Node {
	return Node{Name: name, Pod: PodReady, Current: true, RoleLabel: redisv1alpha1.RoleReplica, Answered: true, Follows: of, LinkUp: true, Streaming: true, Acked: true, Offset: offset,
		Position: live(offset)}
}

// live is a position in the table's one history, as a node answers it.
func live(offset int64) Position {
	return Position{Known: true, ReplID: "h1", Offset: offset, SecondOffset: -1, Source: "live"}
}

// restarted is n after Redis restarted from its append-only file: a
// replica of no node at offset 0, whose data folder said pos.
func restarted(n Node, pos Position) Node {
	return with(n, func(n *Node) {
		n.Primary, n.Follows, n.LinkUp, n.Streaming, n.Acked, n.Offset = false, "", false, false, false, 0
		n.RoleLabel = redisv1alpha1.RoleReplica
		n.Position = pos
	})
}

// onDisk is a position read from a data folder; unknown is none.
func onDisk(replID string, offset int64) Position {
	return Position{Known: true, ReplID: replID, Offset: offset, SecondOffset: -1, Source: "disk"}
}

var (
	unknown = Position{Source: "writes reached the append-only file after the last RDB"}
	noData  = Position{Known: true, Empty: true, Source: "disk"}
)

// orphanNode is a replica whose link to its primary is down.
func orphanNode(name, of string, offset int64) Node {
	return with(replicaNode(name, of, offset), func(n *Node) { n.LinkUp, n.Streaming = false, false })
}

func with(n Node, f func(*Node)) Node { f(&n); return n }

// cordoned is n on a cordoned Kubernetes node.
func cordoned(n Node) Node { return with(n, func(n *Node) { n.Cordoned = true }) }

// window is the failover window of the table.
const window = 30 * time.Second

func TestPlan(t *testing.T) {
	const p0, p1, p2 = "r-0", "r-1", "r-2"
	running := []Node{primaryNode(p0, 100), replicaNode(p1, p0, 100), replicaNode(p2, p0, 100)}
	silent := func(n Node) Node { return with(n, func(n *Node) { n.Answered, n.Primary = false, false }) }
	tests := []struct {
		name       string
		recorded   string
		nodes      []Node
		downFor    time.Duration
		unsettled  bool
		safetyOnly bool
		chosen     string
		want       Decision
	}{
		{
			name:  "should wait for a node to answer before choosing the first primary",
			nodes: []Node{{Name: p0, Pod: PodNotReady}, {Name: p1, Pod: PodMissing}, {Name: p2, Pod: PodNotReady}},
			want:  Decision{Waiting: true, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should record a node that already is a primary when none is recorded",
			nodes: []Node{with(primaryNode(p0, 0), func(n *Node) { n.RoleLabel = "" }), {Name: p1, Pod: PodNotReady}, {Name: p2, Pod: PodMissing}},
			want:  Decision{Action: Record, Target: p0, Primary: p0, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should promote the node furthest along when no node is a primary, and point the others at it",
			nodes: []Node{orphanNode(p0, "", 10), orphanNode(p1, "", 30), orphanNode(p2, "", 20)},
			want:  Decision{Action: Promote, Target: p1, Primary: p1, Repoint: []string{p0, p2}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should promote, of nodes that all restarted, the one furthest along by what each persisted, not the one with the most keys",
			nodes: []Node{restarted(replicaNode(p0, "", 0), onDisk("h1", 900)), restarted(replicaNode(p1, "", 0), onDisk("h1", 37000)),
				restarted(replicaNode(p2, "", 0), onDisk("h1", 20000))},
			want: Decision{Action: Promote, Target: p1, Primary: p1, Repoint: []string{p0, p2}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should promote the first node of a new cluster, where no node holds data",
			nodes: []Node{restarted(replicaNode(p0, "", 0), noData), restarted(replicaNode(p1, "", 0), noData), restarted(replicaNode(p2, "", 0), noData)},
			want:  Decision{Action: Promote, Target: p0, Primary: p0, Repoint: []string{p1, p2}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should promote the node a backup was restored to over the empty ones",
			nodes: []Node{restarted(replicaNode(p0, "", 0), onDisk("backup", 99)), restarted(replicaNode(p1, "", 0), noData),
				restarted(replicaNode(p2, "", 0), noData)},
			want: Decision{Action: Promote, Target: p0, Primary: p0, Repoint: []string{p1, p2}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should hold the election, naming why, while two nodes' positions are unknown",
			nodes: []Node{restarted(replicaNode(p0, "", 0), unknown), restarted(replicaNode(p1, "", 0), onDisk("h1", 500)),
				restarted(replicaNode(p2, "", 0), unknown)},
			want: Decision{Waiting: true, Cause: redisv1alpha1.ReasonElectionHeld, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should elect the node a person chose while the election is held",
			nodes: []Node{restarted(replicaNode(p0, "", 0), unknown), restarted(replicaNode(p1, "", 0), onDisk("h1", 500)),
				restarted(replicaNode(p2, "", 0), unknown)},
			chosen: p2 + "/" + holdID([]Node{restarted(replicaNode(p0, "", 0), unknown), restarted(replicaNode(p1, "", 0), onDisk("h1", 500)),
				restarted(replicaNode(p2, "", 0), unknown)}),
			want: Decision{Action: Promote, Target: p2, Primary: p2, Repoint: []string{p0, p1}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should not elect by a choice made for another hold",
			nodes: []Node{restarted(replicaNode(p0, "", 0), unknown), restarted(replicaNode(p1, "", 0), onDisk("h1", 500)),
				restarted(replicaNode(p2, "", 0), unknown)},
			chosen: p2 + "/0badc0de",
			want:   Decision{Waiting: true, Cause: redisv1alpha1.ReasonElectionHeld, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name: "should hold the election while two histories cannot be ordered",
			nodes: []Node{restarted(replicaNode(p0, "", 0), onDisk("h1", 500)), restarted(replicaNode(p1, "", 0), onDisk("h2", 700)),
				restarted(replicaNode(p2, "", 0), onDisk("h1", 400))},
			want: Decision{Waiting: true, Cause: redisv1alpha1.ReasonElectionHeld, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:     "should promote the recorded primary again when every node restarted and it got furthest, though another holds more keys",
			recorded: p0,
			nodes: []Node{restarted(primaryNode(p0, 0), onDisk("h1", 37013)), restarted(replicaNode(p1, p0, 0), onDisk("h1", 37013)),
				restarted(replicaNode(p2, p0, 0), onDisk("h1", 12000))},
			want: Decision{Action: Promote, Target: p0, Primary: p0, Repoint: []string{p1, p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over to a replica that kept its history rather than promote again the restarted primary at the same position",
			recorded: p0,
			nodes:    []Node{restarted(primaryNode(p0, 0), onDisk("h1", 700)), orphanNode(p1, "", 700), orphanNode(p2, "", 700)},
			want:     Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2, p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over to the node furthest along when the restarted primary persisted less (it was killed)",
			recorded: p0,
			nodes: []Node{restarted(primaryNode(p0, 0), onDisk("h1", 100)), replicaNode(p1, "", 300),
				with(replicaNode(p2, "", 200), func(n *Node) { n.LinkUp, n.Streaming = false, false })},
			want: Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2, p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over with one node's position unknown when the others hold every acknowledged write between them",
			recorded: p0,
			nodes:    []Node{restarted(primaryNode(p0, 0), unknown), replicaNode(p1, "", 300), replicaNode(p2, "", 250)},
			want:     Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2, p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hold a failover when the primary is gone and a replica's position is unknown",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, restarted(replicaNode(p1, "", 0), unknown), replicaNode(p2, "", 250)},
			downFor:  window,
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonElectionHeld, State: redisv1alpha1.StateInitializing},
		},
		// The operator stopped inside a step: what the nodes say decides,
		// never the claim alone.
		{
			name:     "should keep the old primary when a failover's claim was written but nothing promoted (the claimed node as far along)",
			recorded: p1,
			nodes:    []Node{primaryNode(p0, 500), replicaNode(p1, p0, 500), replicaNode(p2, p0, 480)},
			want:     Decision{Action: Failover, Target: p0, Primary: p0, Fence: p1, Repoint: []string{p2, p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fence the old primary when a handover promoted the new one but stopped before the demotion, the old one paused since",
			recorded: p1,
			nodes: []Node{primaryNode(p0, 500),
				with(primaryNode(p1, 0), func(n *Node) {
					n.Offset, n.Position = 520, Position{Known: true, ReplID: "h2", Offset: 520, ReplID2: "h1", SecondOffset: 501, Source: "live"}
				}),
				replicaNode(p2, p0, 500)},
			want: Decision{Action: Repoint, Primary: p1, Repoint: []string{p0, p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hold when a handover stopped before the demotion and the old primary took writes after the new one's promotion",
			recorded: p1,
			nodes: []Node{primaryNode(p0, 530),
				with(primaryNode(p1, 0), func(n *Node) {
					n.Offset, n.Position = 520, Position{Known: true, ReplID: "h2", Offset: 520, ReplID2: "h1", SecondOffset: 501, Source: "live"}
				}),
				replicaNode(p2, p0, 530)},
			want: Decision{Primary: p1, Waiting: true, Cause: redisv1alpha1.ReasonElectionHeld, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fence a replica made a primary by hand, though its history is not behind, when no replica follows it",
			recorded: p0,
			nodes: []Node{primaryNode(p0, 2900), replicaNode(p1, p0, 2900),
				with(primaryNode(p2, 0), func(n *Node) {
					n.RoleLabel, n.Offset = redisv1alpha1.RoleReplica, 190
					n.Position = Position{Known: true, ReplID: "h2", Offset: 190, ReplID2: "h1", SecondOffset: 186, Source: "live"}
				})},
			want: Decision{Action: Repoint, Primary: p0, Repoint: []string{p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should make the diverged old primary the primary when a person chose it",
			recorded: p1,
			nodes: []Node{primaryNode(p0, 530),
				with(primaryNode(p1, 0), func(n *Node) {
					n.Offset, n.Position = 520, Position{Known: true, ReplID: "h2", Offset: 520, ReplID2: "h1", SecondOffset: 501, Source: "live"}
				}),
				replicaNode(p2, p0, 530)},
			chosen: p0 + "/" + holdID([]Node{
				with(primaryNode(p1, 0), func(n *Node) {
					n.Offset, n.Position = 520, Position{Known: true, ReplID: "h2", Offset: 520, ReplID2: "h1", SecondOffset: 501, Source: "live"}
				}),
				primaryNode(p0, 530)}),
			want: Decision{Action: Failover, Target: p0, Primary: p0, Fence: p1, Repoint: []string{p1, p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should finish a failover whose claim was written before the operator was killed, the old primary dead: not wait for it",
			recorded: p2,
			nodes:    []Node{silent(primaryNode(p0, 100)), replicaNode(p1, p0, 90), with(replicaNode(p2, p0, 95), func(n *Node) { n.LinkUp, n.Streaming, n.Acked = false, false, false })},
			want:     Decision{Action: Promote, Target: p2, Primary: p2, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should promote the node a failover fenced the old primary for, when it stopped before the promotion",
			recorded: p1,
			nodes: []Node{with(replicaNode(p0, p1, 500), func(n *Node) { n.LinkUp, n.Streaming, n.Acked = false, false, false }),
				with(replicaNode(p1, p0, 500), func(n *Node) { n.LinkUp, n.Streaming, n.Acked = false, false, false }), replicaNode(p2, p0, 490)},
			want: Decision{Action: Promote, Target: p1, Primary: p1, Repoint: []string{p0, p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should order a replica of the old history behind the node that continued it",
			recorded: p0,
			nodes: []Node{{Name: p0, Pod: PodMissing},
				with(primaryNode(p1, 0), func(n *Node) {
					n.Position = Position{Known: true, ReplID: "h2", Offset: 310, ReplID2: "h1", SecondOffset: 301, Source: "live"}
				}),
				orphanNode(p2, "", 300)},
			downFor: window,
			want:    Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should report Running with one primary and synced replicas",
			recorded: p0,
			nodes:    running,
			want:     Decision{Primary: p0, State: redisv1alpha1.StateRunning},
		},
		{
			name:      "should not report Running before the StatefulSet controller has taken the new spec",
			recorded:  p0,
			nodes:     running,
			unsettled: true,
			want:      Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait out the failover window while the primary's pod is gone",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, orphanNode(p1, p0, 90), orphanNode(p2, p0, 95)},
			downFor:  5 * time.Second,
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonFailoverPending, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fence the primary and promote the replica with the highest offset once its pod has been gone for the window",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, orphanNode(p1, p0, 90), orphanNode(p2, p0, 95)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p2, Primary: p2, Fence: p0, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over at once from a primary that restarted, as every node does, as a replica",
			recorded: p0,
			nodes:    []Node{with(orphanNode(p0, "", 0), func(n *Node) { n.RoleLabel = redisv1alpha1.RolePrimary }), orphanNode(p1, p0, 90), orphanNode(p2, p0, 95)},
			want:     Decision{Action: Failover, Target: p2, Primary: p2, Fence: p0, Repoint: []string{p1, p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:  "should never promote a primary that restarted empty over the replicas that hold the data",
			nodes: []Node{orphanNode(p0, "", 0), orphanNode(p1, p0, 90), orphanNode(p2, p0, 95)},
			want:  Decision{Action: Promote, Target: p2, Primary: p2, Repoint: []string{p0, p1}, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:     "should not fail over while a replica still streams from a primary the operator cannot reach",
			recorded: p0,
			nodes:    []Node{silent(primaryNode(p0, 100)), replicaNode(p1, p0, 100), orphanNode(p2, p0, 90)},
			downFor:  10 * window,
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonPrimaryUnreachable, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a terminating primary that still answers to stop",
			recorded: p0,
			nodes:    []Node{with(primaryNode(p0, 100), func(n *Node) { n.Pod = PodTerminating }), replicaNode(p1, p0, 100), replicaNode(p2, p0, 99)},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over once the terminating primary has been silent for the window",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodTerminating, RoleLabel: redisv1alpha1.RolePrimary}, orphanNode(p1, p0, 100), orphanNode(p2, p0, 99)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:  "should not promote a replica before every node answers",
			nodes: []Node{{Name: p0, Pod: PodNotReady}, orphanNode(p1, p0, 0), orphanNode(p2, p0, 0)},
			want:  Decision{Waiting: true, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:  "should record an existing primary rather than a replica further along",
			nodes: []Node{replicaNode(p0, p1, 50), primaryNode(p1, 40), {Name: p2, Pod: PodMissing}},
			want:  Decision{Action: Record, Target: p1, Primary: p1, State: redisv1alpha1.StateBootstrappingFirstPod},
		},
		{
			name:     "should fail over when the primary has not answered for the window and no replica hears from it",
			recorded: p0,
			nodes:    []Node{silent(primaryNode(p0, 100)), orphanNode(p1, p0, 80), orphanNode(p2, p0, 99)},
			downFor:  window + time.Second,
			want:     Decision{Action: Failover, Target: p2, Primary: p2, Fence: p0, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hold a failover back until every other node answers: a silent one may hold writes the others lack",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, silent(orphanNode(p1, p0, 200)), orphanNode(p2, p0, 95)},
			downFor:  window,
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonNodeSilent, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should promote the replica furthest along even while its pod is not ready",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, with(orphanNode(p1, p0, 200), func(n *Node) { n.Pod = PodNotReady }), orphanNode(p2, p0, 95)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should report an error when the primary is down and no other node answers",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, {Name: p1, Pod: PodNotReady}, {Name: p2, Pod: PodReady}},
			downFor:  window,
			want:     Decision{Primary: p0, Waiting: true, Failure: true, State: redisv1alpha1.StateError},
		},
		{
			name:     "should fence a stale primary that comes back",
			recorded: p1,
			nodes:    []Node{with(primaryNode(p0, 5), func(n *Node) { n.RoleLabel = "" }), primaryNode(p1, 100), replicaNode(p2, p1, 100)},
			want:     Decision{Action: Repoint, Repoint: []string{p0}, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should point every replica that follows another node at the primary in one step",
			recorded: p1,
			nodes:    []Node{orphanNode(p0, "", 0), primaryNode(p1, 100), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Repoint, Repoint: []string{p0, p2}, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should label the pods with their roles",
			recorded: p1,
			nodes:    []Node{{Name: p0, Pod: PodMissing}, with(primaryNode(p1, 100), func(n *Node) { n.RoleLabel = redisv1alpha1.RoleReplica }), replicaNode(p2, p1, 100)},
			want:     Decision{Action: Label, Labels: map[string]string{p1: redisv1alpha1.RolePrimary}, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should give a replica stranded on a node that is gone a new volume",
			recorded: p1,
			nodes:    []Node{{Name: p0, Pod: PodNotReady, Stranded: "its volume is local to node n0, which is gone"}, primaryNode(p1, 100), replicaNode(p2, p1, 100)},
			want:     Decision{Action: ReplaceVolume, Target: p0, Primary: p1, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over from a primary stranded on a node that is gone, never replace its volume",
			recorded: p0,
			nodes:    []Node{{Name: p0, Pod: PodNotReady, Stranded: "its volume is local to node n0, which is gone"}, orphanNode(p1, p0, 100), orphanNode(p2, p0, 90)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p1, Primary: p1, Fence: p0, Repoint: []string{p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a missing node",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), replicaNode(p1, p0, 100), {Name: p2, Pod: PodMissing}},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for a replica whose link is down, saying it is behind",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), orphanNode(p1, p0, 0), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should say a replica is behind, not Running, when it has heard nothing from the primary for a few seconds though its link is up",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 90), func(n *Node) { n.Streaming = false }), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should say a replica is behind, not Running, while the primary has had no acknowledgement from it for a few seconds",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 100), func(n *Node) { n.Acked = false }), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should say no replica is in sync, and fail nothing over, when the primary answers but no replica hears from it",
			recorded: p0,
			nodes: []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 90), func(n *Node) { n.Streaming = false }),
				with(replicaNode(p2, p0, 90), func(n *Node) { n.Streaming = false })},
			downFor: 10 * window,
			want:    Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonNoReplicaInSync, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should send SCRIPT KILL to a primary that answers BUSY within the window",
			recorded: p0,
			nodes:    []Node{with(silent(primaryNode(p0, 100)), func(n *Node) { n.Busy = true }), orphanNode(p1, p0, 100), orphanNode(p2, p0, 100)},
			downFor:  window / 2,
			want:     Decision{Action: KillScript, Target: p0, Primary: p0, Cause: redisv1alpha1.ReasonPrimaryBusy, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over from a primary still busy after the window: its script wrote and cannot be killed",
			recorded: p0,
			nodes:    []Node{with(silent(primaryNode(p0, 100)), func(n *Node) { n.Busy = true }), orphanNode(p1, p0, 90), orphanNode(p2, p0, 100)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p2, Primary: p2, Fence: p0, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand a primary beyond the nodes wanted over to the node furthest along of those that stay",
			recorded: "r-4",
			nodes:    []Node{replicaNode(p0, "r-4", 100), replicaNode(p1, "r-4", 100), replicaNode(p2, "r-4", 100), primaryNode("r-4", 100)},
			want:     Decision{Action: Handover, Target: p0, Primary: p0, Repoint: []string{p1, p2}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for every node to be in sync before handing over a primary beyond the nodes wanted",
			recorded: "r-4",
			nodes:    []Node{replicaNode(p0, "r-4", 100), orphanNode(p1, "r-4", 90), replicaNode(p2, "r-4", 100), primaryNode("r-4", 100)},
			want:     Decision{Primary: "r-4", Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand the primary of a cordoned node over to the replica furthest along on a node that is not cordoned",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), cordoned(replicaNode(p1, p0, 100)), replicaNode(p2, p0, 90)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should wait for every node to be in sync before handing over the primary of a cordoned node",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), orphanNode(p1, p0, 90), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand the primary of a cordoned node over to a replica in sync on a node that is not while the replica evicted beside it is gone",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodMissing}, replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand the primary of a cordoned node over to a replica in sync on a node that is not while the replica evicted beside it terminates",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), cordoned(with(replicaNode(p1, p0, 100), func(n *Node) { n.Pod = PodTerminating })), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should give a replica stranded on the cordoned node of the primary a new volume before the handover",
			recorded: p0,
			nodes: []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodNotReady, RoleLabel: redisv1alpha1.RoleReplica, Stranded: "its volume is local to node n0, which is cordoned"},
				replicaNode(p2, p0, 100)},
			want: Decision{Action: ReplaceVolume, Target: p1, Primary: p0, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand the primary of a cordoned node over to a replica in sync on a node that is not while another replica's new pod waits for its volume",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodNotReady, Current: true, RoleLabel: redisv1alpha1.RoleReplica}, replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should hand the primary of a cordoned node over to a replica in sync, and point at it a replica that answers while its pod is not ready yet",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), with(orphanNode(p1, p0, 0), func(n *Node) { n.Pod = PodNotReady }), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should not hand the primary of a cordoned node over to a replica the primary has had no acknowledgement from while another is away",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodMissing}, with(replicaNode(p2, p0, 100), func(n *Node) { n.Acked = false })},
			want:     Decision{Primary: p0, Waiting: true, Cause: redisv1alpha1.ReasonNoReplicaInSync, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should not hand the primary of a cordoned node over to a replica whose link is down while another is away",
			recorded: p0,
			nodes: []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodMissing},
				with(replicaNode(p2, p0, 100), func(n *Node) { n.Pod = PodNotReady; n.LinkUp, n.Streaming = false, false })},
			want: Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should keep the primary of a cordoned node while the only replica in sync is on a cordoned node too and the other is away",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), {Name: p1, Pod: PodMissing}, cordoned(replicaNode(p2, p0, 100))},
			want:     Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should keep the primary of a cordoned node when every replica's node is cordoned too",
			recorded: p0,
			nodes:    []Node{cordoned(primaryNode(p0, 100)), cordoned(replicaNode(p1, p0, 100)), cordoned(replicaNode(p2, p0, 100))},
			want:     Decision{Primary: p0, State: redisv1alpha1.StateRunning},
		},
		{
			name:     "should not hand over a primary when only a replica's node is cordoned",
			recorded: p0,
			nodes:    []Node{primaryNode(p0, 100), cordoned(replicaNode(p1, p0, 100)), replicaNode(p2, p0, 100)},
			want:     Decision{Primary: p0, State: redisv1alpha1.StateRunning},
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
			name:     "should hand the primary over last, to the current replica furthest along, and point the other replica at it",
			recorded: p0,
			nodes:    []Node{with(primaryNode(p0, 100), func(n *Node) { n.Current = false }), replicaNode(p1, p0, 90), replicaNode(p2, p0, 100)},
			want:     Decision{Action: Handover, Target: p2, Primary: p2, Repoint: []string{p1}, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:       "should hold a handover back, keeping the recorded primary, while only safety steps may be taken",
			recorded:   p0,
			nodes:      []Node{with(primaryNode(p0, 100), func(n *Node) { n.Current = false }), replicaNode(p1, p0, 90), replicaNode(p2, p0, 100)},
			safetyOnly: true,
			want:       Decision{Primary: p0, Waiting: true, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:       "should still fail over while only safety steps may be taken",
			recorded:   p0,
			nodes:      []Node{with(orphanNode(p0, "", 0), func(n *Node) { n.RoleLabel = redisv1alpha1.RolePrimary }), orphanNode(p1, p0, 90), orphanNode(p2, p0, 95)},
			safetyOnly: true,
			want:       Decision{Action: Failover, Target: p2, Primary: p2, Fence: p0, Repoint: []string{p1, p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should replace at once a replica down on an old template, whatever the others",
			recorded: p0,
			nodes: []Node{primaryNode(p0, 100), with(replicaNode(p1, p0, 100), func(n *Node) { n.Pod, n.Answered, n.Current = PodNotReady, false, false }),
				orphanNode(p2, p0, 90)},
			want: Decision{Action: DeletePod, Target: p1, Primary: p0, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:     "on the way to TLS, should point a replica that serves TLS and reaches the primary with TLS at the plain primary again",
			recorded: p0,
			nodes: []Node{with(primaryNode(p0, 100), func(n *Node) { n.Current = false }),
				with(orphanNode(p1, p0, 100), func(n *Node) { n.TLS, n.Link = true, LinkTLS }),
				with(replicaNode(p2, p0, 100), func(n *Node) { n.Current = false })},
			want: Decision{Action: Repoint, Primary: p0, Repoint: []string{p1}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "on the way to TLS, should point a replica that serves TLS and reaches the primary plainly at the TLS primary again",
			recorded: p1,
			nodes: []Node{with(orphanNode(p0, p1, 100), func(n *Node) { n.TLS, n.Link = true, LinkPlain }),
				with(primaryNode(p1, 100), func(n *Node) { n.TLS = true }),
				with(replicaNode(p2, p1, 100), func(n *Node) { n.TLS = true })},
			want: Decision{Action: Repoint, Primary: p1, Repoint: []string{p0}, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "on the way to TLS, should replace the old plain primary, which cannot follow the TLS primary it was handed over to",
			recorded: p1,
			nodes: []Node{with(orphanNode(p0, p1, 100), func(n *Node) { n.Current = false }),
				with(primaryNode(p1, 100), func(n *Node) { n.TLS = true }),
				with(replicaNode(p2, p1, 100), func(n *Node) { n.TLS = true })},
			want: Decision{Action: DeletePod, Target: p0, Primary: p1, State: redisv1alpha1.StateRunningRollingUpdate},
		},
		{
			name:     "should wait for a plain replica of a TLS primary that runs the current template",
			recorded: p1,
			nodes: []Node{orphanNode(p0, p1, 100),
				with(primaryNode(p1, 100), func(n *Node) { n.TLS = true }),
				with(replicaNode(p2, p1, 100), func(n *Node) { n.TLS = true })},
			want: Decision{Primary: p1, Waiting: true, Cause: redisv1alpha1.ReasonReplicaBehind, State: redisv1alpha1.StateInitializing},
		},
		{
			name:     "should fail over from a recorded primary that is beyond the nodes",
			recorded: "r-5",
			nodes:    []Node{orphanNode(p0, "r-5", 10), orphanNode(p1, "r-5", 10), orphanNode(p2, "r-5", 10)},
			downFor:  window,
			want:     Decision{Action: Failover, Target: p0, Primary: p0, Fence: "r-5", Repoint: []string{p1, p2}, State: redisv1alpha1.StateInitializing},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(Observation{Want: 3, Recorded: tt.recorded, Nodes: tt.nodes, PrimaryDownFor: tt.downFor, FailoverAfter: window,
				Settled: !tt.unsettled, SafetyOnly: tt.safetyOnly, Chosen: tt.chosen})
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Decision{}, "Message"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
			if got.Message == "" {
				t.Error("no reason given")
			}
		})
	}
}

// FuzzPlan plans the next step for clusters whose nodes are filled from
// the fuzz input, and checks the rules no step may break: a step acts on
// a node that answers; a promotion or a handover never goes to a node
// behind another that answers (a handover from a cordoned node goes to a
// replica in sync on a node that is not, behind no other such), and a
// failover happens only when every
// other node answers, from a primary that says it is a replica or has been
// down for the window with no replica streaming from it; the recorded
// primary is never deleted or repointed; a primary, once recorded, stays
// recorded; a pod is replaced only while every node is healthy; with
// SafetyOnly, nothing but a failover or a fence is taken; SCRIPT KILL
// goes only to a busy recorded primary, within the window.
// fuzzPosition is one of the positions a node may be at: unknown, no
// data, in the first history, or in a second one that continued the first.
func fuzzPosition(o, k byte) Position {
	switch k % 4 {
	case 0:
		return Position{Source: "fuzzed"}
	case 1:
		return Position{Known: true, Empty: true}
	case 2:
		return Position{Known: true, ReplID: "h1", Offset: int64(o), SecondOffset: -1}
	}
	return Position{Known: true, ReplID: "h2", Offset: int64(o), ReplID2: "h1", SecondOffset: int64(o)/2 + 1}
}

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
		flags := next()
		downFor := time.Duration(next()) * time.Second / 4
		nodes := make([]Node, 0, want)
		for i := range want {
			b, c, o, k := next(), next(), next(), next()
			n := Node{
				Name:      names[i],
				Pod:       []PodState{PodMissing, PodTerminating, PodNotReady, PodReady}[b%4],
				Current:   b&4 != 0,
				Answered:  b&8 != 0,
				Primary:   b&16 != 0,
				LinkUp:    b&32 != 0,
				Streaming: b&32 != 0 && b&64 != 0,
				Busy:      b&8 == 0 && b&128 != 0,
				Acked:     b&32 != 0 && k%2 == 0,
				RoleLabel: []string{"", redisv1alpha1.RolePrimary, redisv1alpha1.RoleReplica}[c%3],
				Offset:    int64(o),
				Position:  fuzzPosition(o, k),
				Cordoned:  flags&(4<<i) != 0,
				TLS:       k&2 != 0,
				Link:      []Link{LinkUnknown, LinkPlain, LinkTLS, LinkUnknown}[(k>>2)%4],
			}
			if f := int(c/3) % 6; f < len(names) && !n.Primary {
				n.Follows = names[f]
			}
			nodes = append(nodes, n)
		}
		in := Observation{Want: want, Recorded: recorded, Nodes: nodes, PrimaryDownFor: downFor, FailoverAfter: window,
			Settled: flags&1 != 0, SafetyOnly: flags&2 != 0}
		d := Plan(in)
		byName := map[string]Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		if d.Message == "" {
			t.Fatalf("%+v: no reason", d)
		}
		if recorded != "" && d.Primary == "" {
			t.Fatalf("recorded %s, decision %+v records no primary", recorded, d)
		}
		answers := func(name string) bool {
			n, ok := byName[name]
			return ok && n.Answered && n.Pod != PodMissing && n.Pod != PodTerminating
		}
		if d.Action == KillScript && (d.Target != recorded || !byName[d.Target].Busy || downFor >= window) {
			t.Fatalf("SCRIPT KILL to %s (%+v), recorded %s, down for %s", d.Target, byName[d.Target], recorded, downFor)
		}
		downOld := func(n Node) bool { return n.Pod == PodNotReady && !n.Answered && !n.Current }
		if d.Action != None && d.Action != Label && d.Action != Repoint && d.Action != KillScript && !answers(d.Target) &&
			(d.Action != DeletePod || !downOld(byName[d.Target])) {
			t.Fatalf("%s on %s, which does not answer: %+v", d.Action, d.Target, byName[d.Target])
		}
		for _, name := range d.Repoint {
			if !answers(name) || name == d.Primary {
				t.Fatalf("%s points %s at %s: %+v", d.Action, name, d.Primary, byName[name])
			}
		}
		// A handover from a cordoned node goes to a replica in sync with
		// the primary on a node that is not cordoned, the one furthest
		// along of those.
		drainTarget := func(n Node) bool {
			return n.Name != recorded && !n.Cordoned && n.Pod == PodReady && n.Answered && !n.Primary && n.Follows == recorded && InSync(n)
		}
		drain := d.Action == Handover && byName[recorded].Cordoned
		if drain && !drainTarget(byName[d.Target]) {
			t.Fatalf("handed the primary %s of a cordoned node over to %+v", recorded, byName[d.Target])
		}
		switch d.Action {
		case Promote, Failover, Handover:
			for _, n := range nodes {
				if drain && drainTarget(n) && n.Offset > byName[d.Target].Offset {
					t.Fatalf("handed the primary %s of a cordoned node over to %s (offset %d), but %s is further along (offset %d)",
						recorded, d.Target, byName[d.Target].Offset, n.Name, n.Offset)
				}
				if drain {
					continue
				}
				if d.Action == Handover {
					if n.Name != recorded && n.Answered && n.Pod != PodMissing && n.Pod != PodTerminating && n.Current && n.Offset > byName[d.Target].Offset {
						t.Fatalf("%s to %s (offset %d), but %s is further along (offset %d)", d.Action, d.Target, byName[d.Target].Offset, n.Name, n.Offset)
					}
					continue
				}
				// An election goes by positions, never by a guess.
				if c, ok := n.Position.Compare(byName[d.Target].Position); answers(n.Name) && (!ok || c > 0) && (!n.Primary || byName[d.Target].Primary) {
					t.Fatalf("%s to %s (%s), but %s is at %s", d.Action, d.Target, byName[d.Target].Position, n.Name, n.Position)
				}
			}
			if d.Action != Promote && d.Target == recorded {
				t.Fatalf("%s to the recorded primary %s", d.Action, recorded)
			}
			if d.Action != Handover && len(nodes) > 1 {
				away := 0
				for _, n := range nodes {
					if !answers(n.Name) || !n.Position.Known {
						away++
					}
				}
				if away > 1 {
					t.Fatalf("%s to %s while %d nodes' positions are not known: %+v", d.Action, d.Target, away, nodes)
				}
			}
		}
		if d.Action == Failover {
			old, known := byName[recorded]
			demoted := known && old.Answered && !old.Primary && old.Pod != PodMissing
			if !demoted && downFor < window {
				t.Fatalf("failed over from %s after %s, within the window", recorded, downFor)
			}
			for _, n := range nodes {
				if n.Name == recorded {
					continue
				}
				if !demoted && n.Answered && n.Follows == recorded && n.Streaming {
					t.Fatalf("failed over from %s while %s streams from it", recorded, n.Name)
				}
				if !answers(n.Name) {
					t.Fatalf("failed over from %s while %s does not answer", recorded, n.Name)
				}
			}
		}
		switch d.Action {
		case Repoint:
			if slices.Contains(d.Repoint, recorded) || d.Primary != recorded {
				t.Fatalf("repointed %v at %s, recorded %s", d.Repoint, d.Primary, recorded)
			}
		case DeletePod:
			target := byName[d.Target]
			if d.Target == recorded || target.Current {
				t.Fatalf("deleted the pod of %+v, recorded %s", target, recorded)
			}
			// A replica that serves is replaced only while every other
			// node is healthy, but one that cannot follow the TLS
			// primary until it is replaced.
			if downOld(target) {
				break
			}
			for _, n := range nodes {
				if n.Name != recorded && n.Pod != PodTerminating && cannotFollow(n, byName[recorded]) {
					continue
				}
				if n.Pod != PodReady || !n.Answered || (n.Name != recorded && !n.LinkUp) {
					t.Fatalf("deleted %s while %s is not healthy: %+v", d.Target, n.Name, n)
				}
			}
		}
		if d.State == redisv1alpha1.StateRunning && (!in.Settled || d.Waiting) {
			t.Fatalf("Running while %+v (settled %v)", d, in.Settled)
		}
		if in.SafetyOnly && d.Action != None && d.Action != Failover && d.Action != Repoint {
			t.Fatalf("%s while only safety steps may be taken", d.Action)
		}
		if in.SafetyOnly && d.Action != Failover && d.Primary != recorded {
			t.Fatalf("primary %s recorded without a failover while only safety steps may be taken (recorded %s)", d.Primary, recorded)
		}
		if d.Failure && d.State != redisv1alpha1.StateError {
			t.Fatalf("failure in state %s", d.State)
		}
	})
}

func TestChangeReason(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"a failover", Decision{Action: Failover}, redisv1alpha1.PrimaryChangeFailover},
		{"the lost primary promoted again", Decision{Action: Promote}, redisv1alpha1.PrimaryChangeFailover},
		{"a handover to roll the primary's pod", Decision{Action: Handover}, redisv1alpha1.PrimaryChangeHandover},
		{"the handover a switchover asked for", Decision{Action: Handover, Switchover: true}, redisv1alpha1.PrimaryChangeSwitchover},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.ChangeReason(); got != tt.want {
				t.Errorf("ChangeReason() = %s, want %s", got, tt.want)
			}
		})
	}
}
