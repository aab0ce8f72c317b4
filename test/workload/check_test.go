package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func setOp(key string, v int64, o Outcome) Op { return Op{Kind: Set, Key: key, Value: v, Outcome: o} }
func delOp(key string, o Outcome) Op          { return Op{Kind: Del, Key: key, Outcome: o} }

// incrOp is an INCR; returned is its answer, for an acknowledged one.
func incrOp(key string, returned int64, o Outcome) Op {
	return Op{Kind: Incr, Key: key, Value: returned, Outcome: o}
}

func TestCheck(t *testing.T) {
	const a = "k-0"
	for _, tc := range []struct {
		name  string
		ops   []Op
		final map[string]Value
		want  Status
		// why holds strings the sentence of a violation must have.
		why []string
	}{
		{name: "the empty history: the key is absent", final: map[string]Value{a: Absent}, want: Allowed},
		{name: "the empty history: a key not read is taken as absent", want: Allowed},
		{name: "the empty history: a key that holds a value", final: map[string]Value{a: Int(7)}, want: Violation,
			why: []string{`holds "7"`, "only absent", "no op on it was acknowledged"}},

		{name: "an acknowledged SET", ops: []Op{setOp(a, 1e6, OK)}, final: map[string]Value{a: Int(1e6)}, want: Allowed},
		{name: "an acknowledged SET lost", ops: []Op{setOp(a, 1e6, OK)}, final: map[string]Value{a: Absent}, want: Violation,
			why: []string{"holds absent", "only 1000000", "SET k-0 1000000"}},
		{name: "a deleted key that comes back", ops: []Op{setOp(a, 1e6, OK), delOp(a, OK)}, final: map[string]Value{a: Int(1e6)}, want: Violation,
			why: []string{`holds "1000000"`, "only absent", "was DEL k-0"}},
		{name: "a deleted key, absent", ops: []Op{setOp(a, 1e6, OK), delOp(a, OK)}, final: map[string]Value{a: Absent}, want: Allowed},
		{name: "an old overwritten value", ops: []Op{setOp(a, 1e6, OK), setOp(a, 2e6, OK)}, final: map[string]Value{a: Int(1e6)}, want: Violation,
			why: []string{`holds "1000000"`, "only 2000000", "was SET k-0 2000000"}},
		{name: "the value that overwrote it", ops: []Op{setOp(a, 1e6, OK), setOp(a, 2e6, OK)}, final: map[string]Value{a: Int(2e6)}, want: Allowed},

		{name: "an unknown SET applied", ops: []Op{setOp(a, 1e6, OK), setOp(a, 2e6, Unknown)}, final: map[string]Value{a: Int(2e6)}, want: Allowed},
		{name: "an unknown SET not applied", ops: []Op{setOp(a, 1e6, OK), setOp(a, 2e6, Unknown)}, final: map[string]Value{a: Int(1e6)}, want: Allowed},
		{name: "an unknown SET allows no third value", ops: []Op{setOp(a, 1e6, OK), setOp(a, 2e6, Unknown)}, final: map[string]Value{a: Int(3e6)}, want: Violation,
			why: []string{"one of 1000000, 2000000", "(1 unknown)"}},
		{name: "an unknown DEL applied", ops: []Op{setOp(a, 1e6, OK), delOp(a, Unknown)}, final: map[string]Value{a: Absent}, want: Allowed},
		{name: "an unknown DEL not applied", ops: []Op{setOp(a, 1e6, OK), delOp(a, Unknown)}, final: map[string]Value{a: Int(1e6)}, want: Allowed},
		{name: "an unknown INCR applied", ops: []Op{setOp(a, 1e6, OK), incrOp(a, 0, Unknown)}, final: map[string]Value{a: Int(1e6 + 1)}, want: Allowed},
		{name: "an unknown INCR not applied", ops: []Op{setOp(a, 1e6, OK), incrOp(a, 0, Unknown)}, final: map[string]Value{a: Int(1e6)}, want: Allowed},
		{name: "unknown ops, any subset: the DEL and the INCR after it", ops: []Op{setOp(a, 1e6, OK), delOp(a, Unknown), incrOp(a, 0, Unknown), incrOp(a, 0, Unknown)},
			final: map[string]Value{a: Int(2)}, want: Allowed},
		{name: "an acknowledged SET after unknown ops settles the value", ops: []Op{setOp(a, 1e6, Unknown), incrOp(a, 0, Unknown), setOp(a, 3e6, OK)},
			final: map[string]Value{a: Int(1e6 + 1)}, want: Violation, why: []string{"only 3000000"}},

		{name: "acknowledged INCRs from absent", ops: []Op{incrOp(a, 1, OK), incrOp(a, 2, OK), incrOp(a, 3, OK)}, final: map[string]Value{a: Int(3)}, want: Allowed},
		{name: "an unknown INCR between acknowledged INCRs whose answers prove it applied", ops: []Op{incrOp(a, 1, OK), incrOp(a, 0, Unknown), incrOp(a, 3, OK)},
			final: map[string]Value{a: Int(3)}, want: Allowed},
		{name: "the proven INCR pins the value", ops: []Op{incrOp(a, 1, OK), incrOp(a, 0, Unknown), incrOp(a, 3, OK)},
			final: map[string]Value{a: Int(2)}, want: Violation, why: []string{`holds "2"`, "only 3", "INCR k-0 -> 3"}},
		{name: "an unknown INCR whose answer after it proves it did not apply", ops: []Op{incrOp(a, 1, OK), incrOp(a, 0, Unknown), incrOp(a, 2, OK)},
			final: map[string]Value{a: Int(2)}, want: Allowed},
		{name: "a missing INCR: the value read lacks an acknowledged INCR", ops: []Op{incrOp(a, 1, OK), incrOp(a, 2, OK), incrOp(a, 3, OK)},
			final: map[string]Value{a: Int(2)}, want: Violation, why: []string{`holds "2"`, "only 3", "was INCR k-0 -> 3"}},
		{name: "a missing INCR: the next INCR's answer shows it undone", ops: []Op{incrOp(a, 1, OK), incrOp(a, 2, OK), incrOp(a, 2, OK)},
			final: map[string]Value{a: Int(2)}, want: Violation,
			why: []string{"the acknowledged INCR (op 2) returned 2", "could hold only 2", "the acknowledged op before it was INCR k-0 -> 2 (op 1)"}},
		{name: "an INCR answer no unknown op explains", ops: []Op{incrOp(a, 1, OK), incrOp(a, 3, OK)}, final: map[string]Value{a: Int(3)}, want: Violation,
			why: []string{"returned 3", "could hold only 1"}},
		{name: "an INCR on a SET's value", ops: []Op{setOp(a, 5e6, OK), incrOp(a, 5e6+1, OK)}, final: map[string]Value{a: Int(5e6 + 1)}, want: Allowed},
		{name: "an INCR after a DEL starts from 1", ops: []Op{setOp(a, 5e6, OK), delOp(a, OK), incrOp(a, 1, OK)}, final: map[string]Value{a: Int(1)}, want: Allowed},
		{name: "an INCR's answer proves an unknown DEL applied", ops: []Op{setOp(a, 5e6, OK), delOp(a, Unknown), incrOp(a, 1, OK)},
			final: map[string]Value{a: Int(1)}, want: Allowed},
		{name: "an INCR's answer proves an unknown SET applied", ops: []Op{setOp(a, 5e6, OK), setOp(a, 6e6, Unknown), incrOp(a, 6e6+1, OK)},
			final: map[string]Value{a: Int(6e6 + 1)}, want: Allowed},
		{name: "an old value after an INCR", ops: []Op{setOp(a, 5e6, OK), incrOp(a, 5e6+1, OK)}, final: map[string]Value{a: Int(5e6)}, want: Violation},

		{name: "a value that is not an integer", ops: []Op{setOp(a, 1e6, OK)}, final: map[string]Value{a: {Present: true, Text: "hello"}}, want: Violation,
			why: []string{`holds "hello"`}},
		{name: "an integer not as Redis writes it", ops: []Op{setOp(a, 1e6, OK)}, final: map[string]Value{a: {Present: true, Text: "01000000"}}, want: Violation},
		{name: "an empty value is not absent", final: map[string]Value{a: {Present: true}}, want: Violation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(History{Keys: []string{a}, Ops: tc.ops}, tc.final)
			if len(rep.Keys) != 1 {
				t.Fatalf("%d key reports, want 1: %+v", len(rep.Keys), rep.Keys)
			}
			got := rep.Keys[0]
			t.Log(got.Why)
			if got.Key != a || got.Status != tc.want {
				t.Fatalf("%s: %s (%s), want %s", got.Key, got.Status, got.Why, tc.want)
			}
			if (got.Why == "") != (tc.want == Allowed) {
				t.Errorf("why %q with status %s", got.Why, got.Status)
			}
			for _, s := range tc.why {
				if !strings.Contains(got.Why, s) {
					t.Errorf("why %q lacks %q", got.Why, s)
				}
			}
			if lost := rep.Lost(); lost != len(rep.Violations()) || (lost == 1) != (tc.want == Violation) {
				t.Errorf("Lost() %d with status %s", lost, tc.want)
			}
		})
	}
}

// Keys are checked each on its own ops; the report has the history's keys
// in their order, then the others named, sorted.
func TestCheckKeys(t *testing.T) {
	h := History{Keys: []string{"k-1", "k-0"}, Ops: []Op{
		setOp("k-0", 1e6, OK), setOp("k-1", 2e6, OK), incrOp("k-0", 1e6+1, OK), delOp("k-1", OK), setOp("other", 3e6, OK),
	}}
	rep := Check(h, map[string]Value{"k-0": Int(1e6 + 1), "k-1": Int(2e6), "other": Int(3e6), "stray": Int(1)})
	got := make([]string, 0, len(rep.Keys))
	for _, k := range rep.Keys {
		got = append(got, fmt.Sprintf("%s %s", k.Key, k.Status))
	}
	want := []string{"k-1 violation", "k-0 allowed", "other allowed", "stray violation"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reports %v, want %v", got, want)
	}
	if rep.Lost() != 2 || len(rep.Unchecked()) != 0 {
		t.Errorf("lost %d, unchecked %d; want 2 and 0", rep.Lost(), len(rep.Unchecked()))
	}
}

// The message of a violation names the time of the last acknowledged op.
func TestCheckNamesWhenTheLastAcknowledgedOpWas(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.UTC)
	op := setOp("k-0", 1e6, OK)
	op.At = at
	rep := Check(History{Keys: []string{"k-0"}, Ops: []Op{op}}, map[string]Value{"k-0": Absent})
	if want := "was SET k-0 1000000 (op 0, at 15:04:05.123)"; !strings.Contains(rep.Keys[0].Why, want) {
		t.Errorf("why %q lacks %q", rep.Keys[0].Why, want)
	}
}

// A key whose unknown ops make too many values possible is not checked,
// and the report says so.
func TestCheckGivesUpPastMaxPossible(t *testing.T) {
	ops := make([]Op, 0, 1+MaxPossible)
	ops = append(ops, setOp("k-0", 1e6, OK))
	for i := range MaxPossible {
		ops = append(ops, setOp("k-0", int64(i+2)*1e6, Unknown))
	}
	rep := Check(History{Keys: []string{"k-0"}, Ops: ops}, map[string]Value{"k-0": Int(1)})
	got := rep.Keys[0]
	if got.Status != Unchecked || !strings.Contains(got.Why, "more than 4096 values") || rep.Lost() != 0 || len(rep.Unchecked()) != 1 {
		t.Errorf("%s: %q, lost %d; want unchecked, saying so", got.Status, got.Why, rep.Lost())
	}
	// One op fewer: checked.
	rep = Check(History{Keys: []string{"k-0"}, Ops: ops[:MaxPossible]}, map[string]Value{"k-0": Int(1)})
	if got := rep.Keys[0]; got.Status != Violation {
		t.Errorf("%s: %q; want a violation", got.Status, got.Why)
	}
}

func TestCheckSnapshot(t *testing.T) {
	ops := []Op{
		setOp("a", 1e6, OK),      // 1
		setOp("b", 2e6, OK),      // 2
		incrOp("a", 1e6+1, OK),   // 3
		delOp("b", OK),           // 4
		setOp("a", 5e6, Unknown), // 5
		incrOp("b", 1, OK),       // 6
	}
	h := History{Keys: []string{"a", "b"}, Ops: ops}
	for _, tc := range []struct {
		name        string
		snapshot    map[string]Value
		need        int
		first, last int
		why         string
	}{
		{name: "before any op", snapshot: map[string]Value{}, first: 0, last: 0},
		{name: "after the first op", snapshot: map[string]Value{"a": Int(1e6), "b": Absent}, first: 1, last: 1},
		{name: "after the second", snapshot: map[string]Value{"a": Int(1e6), "b": Int(2e6)}, first: 2, last: 2},
		{name: "after the fourth, or the fifth not applied", snapshot: map[string]Value{"a": Int(1e6 + 1)}, first: 4, last: 5},
		{name: "after the fifth applied", snapshot: map[string]Value{"a": Int(5e6)}, first: 5, last: 5},
		{name: "after the last", snapshot: map[string]Value{"a": Int(5e6), "b": Int(1)}, first: 6, last: 6},
		{name: "the last, the unknown SET not applied", snapshot: map[string]Value{"a": Int(1e6 + 1), "b": Int(1)}, first: 6, last: 6},
		{name: "at least the ops needed", snapshot: map[string]Value{"a": Int(1e6), "b": Absent}, need: 2, first: -1, last: -1,
			why: "the closest, the first 2 ops, differs on 1 of 2 keys: b holds absent where the prefix allows only 2000000"},
		{name: "a gap: a later op on one key without an earlier one on another", snapshot: map[string]Value{"a": Absent, "b": Int(2e6)}, first: -1, last: -1,
			why: "no prefix of the 6 ops gives the copy"},
		{name: "a stray key", snapshot: map[string]Value{"c": Int(1)}, first: -1, last: -1, why: "c holds \"1\" where the prefix allows only absent"},
		{name: "more ops needed than the history has", snapshot: map[string]Value{}, need: 7, first: -1, last: -1, why: "fewer than the 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSnapshot(h, tc.snapshot, tc.need)
			if got.First != tc.first || got.Last != tc.last || got.OK() != (tc.first >= 0) {
				t.Errorf("prefixes %d to %d (ok %v, %s), want %d to %d", got.First, got.Last, got.OK(), got.Why, tc.first, tc.last)
			}
			if !strings.Contains(got.Why, tc.why) || (got.Why == "") != (tc.why == "") {
				t.Errorf("why %q, want it to hold %q", got.Why, tc.why)
			}
		})
	}
}

func TestAckedBefore(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	at := func(op Op, s int) Op { op.At = t0.Add(time.Duration(s) * time.Second); return op }
	h := History{Ops: []Op{at(setOp("a", 1e6, OK), 1), at(setOp("a", 2e6, Unknown), 2), at(incrOp("a", 1e6+1, OK), 3), at(delOp("a", OK), 5), at(delOp("a", Unknown), 6)}}
	for _, tc := range []struct {
		before        int
		prefix, acked int
	}{{0, 0, 0}, {2, 1, 1}, {3, 1, 1}, {4, 3, 2}, {10, 4, 3}} {
		if p, a := h.AckedBefore(t0.Add(time.Duration(tc.before) * time.Second)); p != tc.prefix || a != tc.acked {
			t.Errorf("before %d s: prefix %d, acked %d; want %d, %d", tc.before, p, a, tc.prefix, tc.acked)
		}
	}
	if h.Acked() != 3 {
		t.Errorf("Acked() %d, want 3", h.Acked())
	}
}

func TestOpString(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want string
	}{
		{setOp("a", 1e6, OK), "SET a 1000000"},
		{setOp("a", 1e6, Unknown), "SET a 1000000 (unknown)"},
		{delOp("a", OK), "DEL a"},
		{incrOp("a", 7, OK), "INCR a -> 7"},
		{incrOp("a", 0, Unknown), "INCR a (unknown)"},
	} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
