package redisenterprisecluster

import (
	"cmp"
	"fmt"
	"strings"
)

// Position is how far a node got in the history of writes: the
// replication ID of its history and its offset in it. A node promoted to
// primary continues the history it was in under a new ID; ReplID2 is that
// history, which it holds up to SecondOffset (exclusive), as Redis's
// master_replid2 and second_repl_offset say.
//
// A node that restarts from its append-only file reports offset 0 and a
// new ID (Redis restores them only from an RDB), so a live answer says
// nothing of what it holds until it syncs again; what it persisted before
// it stopped does (see DiskPosition).
type Position struct {
	// Known is whether the position is proven. An unknown position is
	// never compared: the node may hold anything.
	Known bool
	// Empty is whether the node holds no data at all: its data folder was
	// empty when it started, and it has not synced since.
	Empty bool
	// ReplID and Offset are the history and how far along it.
	ReplID string
	Offset int64
	// ReplID2 and SecondOffset are the history the node continued when
	// it was promoted, and the offset up to which it holds it.
	ReplID2      string
	SecondOffset int64
	// Source says where the position was read (SourceLive, SourceDisk),
	// or, for an unknown one, why it is not known.
	Source string
}

// Where a known position was read.
const (
	// SourceLive: as the node answers; it has replicated since it started.
	SourceLive = "live"
	// SourceDisk: what its data folder said before Redis started.
	SourceDisk = "disk"
)

// Compare says whether a is behind (-1), at (0) or ahead of (+1) b; ok
// is false when their histories cannot be ordered (neither continues the
// other), or either is unknown.
func (a Position) Compare(b Position) (c int, ok bool) {
	switch {
	case !a.Known || !b.Known:
		return 0, false
	case a.Empty || b.Empty:
		// A node with no data is behind every node with some.
		return cmpBool(!a.Empty, !b.Empty), true
	case a.ReplID == b.ReplID:
		return cmp.Compare(a.Offset, b.Offset), true
	case b.ReplID2 == a.ReplID && a.Offset < b.SecondOffset:
		// b continued a's history past where a is.
		return -1, true
	case a.ReplID2 == b.ReplID && b.Offset < a.SecondOffset:
		return 1, true
	case b.ReplID2 == a.ReplID && b.Offset < b.SecondOffset:
		// b took nothing since it left a's history: it holds a prefix
		// of it.
		return cmp.Compare(a.Offset, b.Offset), true
	case a.ReplID2 == b.ReplID && a.Offset < a.SecondOffset:
		return cmp.Compare(a.Offset, b.Offset), true
	}
	return 0, false
}

func (a Position) String() string {
	switch {
	case !a.Known:
		return "position unknown: " + a.Source
	case a.Empty:
		return "no data"
	}
	return fmt.Sprintf("offset %d of %s (%s)", a.Offset, short(a.ReplID), a.Source)
}

// short is the start of a replication ID, enough to tell two apart in a
// message.
func short(id string) string { return id[:min(len(id), 8)] }

// furthest returns the node of candidates that holds every write a client
// had acknowledged (with WAIT, by at least one replica), when that can be
// proven, else why not. Every acknowledged write is on two nodes at least
// (the primary that took it and a replica), so the node furthest along of
// those whose positions are known holds it as long as at most one node of
// the cluster (all: candidates or not) is not among them, and every known
// position is ordered against it. Ties are equal histories: prefer is
// taken first, then a node that already is a primary, then the first.
func furthest(candidates []Node, all int, prefer string) (Node, string) {
	var known, unknown []Node
	for _, n := range candidates {
		if n.Position.Known {
			known = append(known, n)
		} else {
			unknown = append(unknown, n)
		}
	}
	if len(candidates) == 1 && all == 1 {
		// The cluster's only node: there is no other copy to prefer.
		return candidates[0], ""
	}
	if len(known) == 0 {
		return Node{}, fmt.Sprintf("no node's position in the history of writes is known (%s)", positions(unknown))
	}
	if away := all - len(known); away > 1 {
		return Node{}, fmt.Sprintf("the positions of %d nodes are not known (%s), and an acknowledged write may be on those alone", away, positions(unknown))
	}
	top := known[0]
	for _, n := range known[1:] {
		c, ok := n.Position.Compare(top.Position)
		if !ok {
			return Node{}, fmt.Sprintf("the histories of %s (%s) and %s (%s) cannot be ordered", top.Name, top.Position, n.Name, n.Position)
		}
		if c > 0 || (c == 0 && betterTie(n, top, prefer)) {
			top = n
		}
	}
	for _, n := range known {
		if _, ok := n.Position.Compare(top.Position); !ok {
			return Node{}, fmt.Sprintf("the histories of %s (%s) and %s (%s) cannot be ordered", top.Name, top.Position, n.Name, n.Position)
		}
	}
	return top, ""
}

// betterTie reports whether a is preferred to b at the same position: a
// node that is a primary (it takes the writes: choosing another would
// leave two), then one that kept its replication history since it
// started (the others can continue from it, where a node that restarted
// makes every replica sync in full), then prefer.
func betterTie(a, b Node, prefer string) bool {
	if a.Primary != b.Primary {
		return a.Primary
	}
	if aLive, bLive := a.Position.Source == SourceLive, b.Position.Source == SourceLive; aLive != bLive {
		return aLive
	}
	return a.Name == prefer && b.Name != prefer
}

func positions(nodes []Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name + ": " + n.Position.String()
	}
	return strings.Join(out, "; ")
}
