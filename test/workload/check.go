package workload

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxPossible is the most values the checker keeps possible for one key.
// Only unknown ops add values (an acknowledged op leaves one), and an
// unknown op adds at most one (a SET's value, absent) or one more than
// each value kept (an INCR), so the sets stay small: dozens of unknown
// ops on one key with no acknowledged op between them. A key whose set
// would grow past it is not checked, and its report says so.
const MaxPossible = 4096

// Status is the checker's verdict on one key.
type Status uint8

// The verdicts.
const (
	// Allowed: some history the ops allow gives the value read.
	Allowed Status = iota
	// Violation: no history the ops allow gives the value read, or an
	// acknowledged INCR returned a value none gives.
	Violation
	// Unchecked: the key's history allowed more than MaxPossible values.
	Unchecked
)

func (s Status) String() string {
	switch s {
	case Allowed:
		return "allowed"
	case Violation:
		return "violation"
	case Unchecked:
		return "unchecked"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// KeyReport is the checker's verdict on one key.
type KeyReport struct {
	Key    string
	Status Status
	// Final is the value read.
	Final Value
	// Why says, in a sentence, what is wrong; empty when Allowed. It
	// numbers the ops from 0, in the history's order.
	Why string
}

// Report is the checker's verdict on every key of a history.
type Report struct {
	// Keys has one report per key: the history's keys in their order,
	// then any other key the values read name, in order.
	Keys []KeyReport
}

// Violations returns the reports of the keys whose value no history the
// ops allow gives.
func (r Report) Violations() []KeyReport { return r.with(Violation) }

// Unchecked returns the reports of the keys the checker gave up on.
func (r Report) Unchecked() []KeyReport { return r.with(Unchecked) }

// Lost is how many keys hold a value no history the ops allow gives: the
// keys an acknowledged op is lost on (or a stale value came back to).
func (r Report) Lost() int { return len(r.Violations()) }

func (r Report) with(s Status) []KeyReport {
	var out []KeyReport
	for _, k := range r.Keys {
		if k.Status == s {
			out = append(out, k)
		}
	}
	return out
}

// Check checks final, the value of each key read from one node once the
// client has stopped, against h. Per key, from absent, it applies the ops
// in their order: every acknowledged op must have taken effect, and any
// subset of the unknown ones may have; an acknowledged INCR's answer pins
// the value at that point (a violation when no history allowed so far
// gives it). The value read is allowed when some history the ops allow
// gives it. A key final lacks is taken as absent (Read gives every key it
// is asked for).
//
// The check takes an unknown op to have taken effect, if at all, where
// it stands in the history: the client sends one command at a time, and
// after an error sends its next op only on a new connection that has
// answered a PING. A command left on the old connection would have to
// reach the node after that PING to take effect out of its place: a
// frozen node reads it, on waking, before the new connection's PING, and
// the Redis fault tests hold back no client packet to a node that keeps
// running.
func Check(h History, final map[string]Value) Report {
	byKey := map[string][]int{}
	for i, op := range h.Ops {
		byKey[op.Key] = append(byKey[op.Key], i)
	}
	var rep Report
	for _, key := range allKeys(h, final) {
		k := newTracker(key)
		for _, i := range byKey[key] {
			k.apply(i, h.Ops[i])
		}
		rep.Keys = append(rep.Keys, k.report(final[key]))
	}
	return rep
}

// allKeys returns h's keys in their order, then the other keys of h's
// ops and of values, sorted.
func allKeys(h History, values map[string]Value) []string {
	seen := map[string]bool{}
	keys := make([]string, 0, len(h.Keys))
	for _, k := range h.Keys {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var more []string
	for _, op := range h.Ops {
		if !seen[op.Key] {
			seen[op.Key] = true
			more = append(more, op.Key)
		}
	}
	for k := range values {
		if !seen[k] {
			seen[k] = true
			more = append(more, k)
		}
	}
	slices.Sort(more)
	return append(keys, more...)
}

// state is a value the model of a key holds: absent, or an integer (every
// value the workload writes is one).
type state struct {
	present bool
	n       int64
}

var absent = state{}

func (s state) String() string {
	if !s.present {
		return "absent"
	}
	return strconv.FormatInt(s.n, 10)
}

// incr is INCR on s; false when Redis would refuse it (an overflow).
func incr(s state) (state, bool) {
	if !s.present {
		return state{present: true, n: 1}, true
	}
	if s.n == math.MaxInt64 {
		return s, false
	}
	return state{present: true, n: s.n + 1}, true
}

// stateOf is the state a value read is, false when it is none the model
// can hold (not a decimal integer as Redis writes one).
func stateOf(v Value) (state, bool) {
	if !v.Present {
		return absent, true
	}
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != v.Text {
		return state{}, false
	}
	return state{present: true, n: n}, true
}

// tracker follows one key through its ops: the set of values it may hold.
type tracker struct {
	key      string
	possible map[state]bool
	ops      int
	unknown  int
	// lastAcked is the last acknowledged op applied, -1 before one.
	lastAcked   int
	lastAckedOp Op
	// violation is the first violation of the ops themselves (an
	// acknowledged INCR's answer no history gives).
	violation string
	// overflow is the op after which the set grew past MaxPossible, -1
	// while it has not.
	overflow int
}

func newTracker(key string) *tracker {
	return &tracker{key: key, possible: map[state]bool{absent: true}, lastAcked: -1, overflow: -1}
}

// apply applies ops[i] (op), an op on the tracker's key.
func (k *tracker) apply(i int, op Op) {
	k.ops++
	if k.overflow >= 0 {
		return
	}
	if op.Outcome != OK {
		k.unknown++
		switch op.Kind {
		case Set:
			k.possible[state{present: true, n: op.Value}] = true
		case Del:
			k.possible[absent] = true
		case Incr:
			for _, s := range slices.Collect(maps.Keys(k.possible)) {
				if t, ok := incr(s); ok {
					k.possible[t] = true
				}
			}
		}
		if len(k.possible) > MaxPossible {
			k.overflow = i
		}
		return
	}
	switch op.Kind {
	case Set:
		k.possible = map[state]bool{{present: true, n: op.Value}: true}
	case Del:
		k.possible = map[state]bool{absent: true}
	case Incr:
		want := state{present: true, n: op.Value}
		found := false
		for s := range k.possible {
			if t, ok := incr(s); ok && t == want {
				found = true
				break
			}
		}
		if !found && k.violation == "" {
			k.violation = fmt.Sprintf("key %s: the acknowledged INCR (op %d) returned %d, which no history allowed gives: before it the key could hold %s; %s",
				k.key, i, op.Value, k.list(), k.lastAckedText(true))
		}
		k.possible = map[state]bool{want: true}
	}
	k.lastAcked, k.lastAckedOp = i, op
}

// report is the verdict on the key given final, the value read.
func (k *tracker) report(final Value) KeyReport {
	rep := KeyReport{Key: k.key, Final: final}
	switch {
	case k.violation != "":
		rep.Status, rep.Why = Violation, fmt.Sprintf("%s; the node holds %s", k.violation, final)
	case k.overflow >= 0:
		rep.Status = Unchecked
		rep.Why = fmt.Sprintf("key %s: not checked: after op %d its history allowed more than %d values (%d ops on it, %d unknown)",
			k.key, k.overflow, MaxPossible, k.ops, k.unknown)
	case !k.allows(final):
		rep.Status = Violation
		rep.Why = fmt.Sprintf("key %s: the node holds %s, which no history allowed gives: %s, it may hold %s; %s",
			k.key, final, k.after(), k.list(), k.lastAckedText(false))
	}
	return rep
}

// after says how many ops the key had.
func (k *tracker) after() string {
	switch k.ops {
	case 0:
		return "with no op on it"
	case 1:
		return fmt.Sprintf("after its one op (%d unknown)", k.unknown)
	}
	return fmt.Sprintf("after its %d ops (%d unknown)", k.ops, k.unknown)
}

// allows reports whether v is one of the values the key may hold.
func (k *tracker) allows(v Value) bool {
	s, ok := stateOf(v)
	return ok && k.possible[s]
}

// list names the values the key may hold, ten at most.
func (k *tracker) list() string {
	states := slices.SortedFunc(maps.Keys(k.possible), func(a, b state) int {
		if a.present != b.present {
			if a.present {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.n, b.n)
	})
	const most = 10
	names := make([]string, 0, min(len(states), most))
	for _, s := range states[:min(len(states), most)] {
		names = append(names, s.String())
	}
	text := strings.Join(names, ", ")
	if len(states) > most {
		text += fmt.Sprintf(" and %d more", len(states)-most)
	}
	if len(states) == 1 {
		return "only " + text
	}
	return "one of " + text
}

// lastAckedText names the last acknowledged op applied, as the last one
// (before false) or as the one before the op at hand (before true).
func (k *tracker) lastAckedText(before bool) string {
	if k.lastAcked < 0 {
		if before {
			return "no op on it was acknowledged before it"
		}
		return "no op on it was acknowledged"
	}
	text := "the last acknowledged op was "
	if before {
		text = "the acknowledged op before it was "
	}
	text += fmt.Sprintf("%s (op %d", k.lastAckedOp, k.lastAcked)
	if !k.lastAckedOp.At.IsZero() {
		text += ", at " + k.lastAckedOp.At.Format("15:04:05.000")
	}
	return text + ")"
}

// SnapshotReport is the verdict on a copy of the dataset.
type SnapshotReport struct {
	// First and Last are the shortest and the longest prefix of the
	// history's ops (a count of ops, at least the need asked for) whose
	// state the copy is; both -1 when none is.
	First, Last int
	// Why says, when no prefix gives the copy, how the copy differs from
	// what the prefix closest to it allows.
	Why string
	// Unchecked names the keys the checker gave up on (more than
	// MaxPossible values): they are taken to match.
	Unchecked []string
}

// OK reports whether some prefix of the history gives the copy.
func (s SnapshotReport) OK() bool { return s.First >= 0 }

// CheckSnapshot checks a copy of the dataset taken at one moment (a
// backup, restored) against h: it must be the state, on every key at
// once, after some prefix of h's ops of at least need ops, with every
// acknowledged op of the prefix applied and any subset of its unknown
// ones. A key snapshot lacks is taken as absent. An acknowledged INCR's
// answer pins its key's value as in Check, which reports the history's
// own violations.
func CheckSnapshot(h History, snapshot map[string]Value, need int) SnapshotReport {
	need = max(need, 0)
	rep := SnapshotReport{First: -1, Last: -1}
	if need > len(h.Ops) {
		rep.Why = fmt.Sprintf("the history has %d ops, fewer than the %d the copy must hold", len(h.Ops), need)
		return rep
	}
	keys := allKeys(h, snapshot)
	trackers := map[string]*tracker{}
	match := map[string]bool{}
	matching := 0
	for _, key := range keys {
		trackers[key] = newTracker(key)
		if match[key] = trackers[key].allows(snapshot[key]); match[key] {
			matching++
		}
	}
	best, bestMatching := -1, -1
	for p := 0; ; p++ {
		if p >= need {
			if matching == len(keys) {
				if rep.First < 0 {
					rep.First = p
				}
				rep.Last = p
			}
			if matching > bestMatching {
				best, bestMatching = p, matching
			}
		}
		if p == len(h.Ops) {
			break
		}
		op := h.Ops[p]
		k := trackers[op.Key]
		k.apply(p, op)
		now := k.overflow >= 0 || k.allows(snapshot[op.Key])
		if now != match[op.Key] {
			match[op.Key] = now
			if now {
				matching++
			} else {
				matching--
			}
		}
	}
	for _, key := range keys {
		if trackers[key].overflow >= 0 {
			rep.Unchecked = append(rep.Unchecked, key)
		}
	}
	if rep.OK() {
		return rep
	}
	rep.Why = snapshotDiff(h, snapshot, keys, best)
	return rep
}

// snapshotDiff says how snapshot differs from the state after the first
// p ops of h: the first few keys whose value it does not allow.
func snapshotDiff(h History, snapshot map[string]Value, keys []string, p int) string {
	trackers := map[string]*tracker{}
	for _, key := range keys {
		trackers[key] = newTracker(key)
	}
	for i, op := range h.Ops[:p] {
		trackers[op.Key].apply(i, op)
	}
	var diffs []string
	n := 0
	for _, key := range keys {
		k := trackers[key]
		if k.overflow >= 0 || k.allows(snapshot[key]) {
			continue
		}
		n++
		if len(diffs) < 3 {
			diffs = append(diffs, fmt.Sprintf("%s holds %s where the prefix allows %s", key, snapshot[key], k.list()))
		}
	}
	return fmt.Sprintf("no prefix of the %d ops gives the copy; the closest, the first %d ops, differs on %d of %d keys: %s",
		len(h.Ops), p, n, len(keys), strings.Join(diffs, "; "))
}

// AckedBefore returns the length of the shortest prefix of h's ops that
// holds every op acknowledged before t, and how many of its ops were
// acknowledged.
func (h History) AckedBefore(t time.Time) (prefix, acked int) {
	for i, op := range h.Ops {
		if op.Outcome == OK && op.At.Before(t) {
			prefix = i + 1
		}
	}
	for _, op := range h.Ops[:prefix] {
		if op.Outcome == OK {
			acked++
		}
	}
	return prefix, acked
}
