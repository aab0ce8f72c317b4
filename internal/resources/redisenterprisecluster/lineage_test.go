package redisenterprisecluster

import "testing"

func TestPositionCompare(t *testing.T) {
	at := func(id string, off int64) Position {
		return Position{Known: true, ReplID: id, Offset: off, SecondOffset: -1}
	}
	// promoted is a node that left h1 at offset 100 (second offset 101)
	// for h2, and is at off in h2.
	promoted := func(off int64) Position {
		return Position{Known: true, ReplID: "h2", Offset: off, ReplID2: "h1", SecondOffset: 101}
	}
	tests := []struct {
		name   string
		a, b   Position
		want   int
		wantOK bool
	}{
		{"one history: by offset", at("h1", 5), at("h1", 9), -1, true},
		{"one history, equal", at("h1", 9), at("h1", 9), 0, true},
		{"a node of the old history at or before the promotion is behind", at("h1", 100), promoted(150), -1, true},
		{"the promoted node is ahead of it", promoted(150), at("h1", 90), 1, true},
		{"a node of the old history past the promotion cannot be ordered", at("h1", 120), promoted(150), 0, false},
		{"a node promoted that took nothing since holds a prefix of the old history", at("h1", 2900), promoted(100), 1, true},
		{"unrelated histories cannot be ordered", at("h1", 5), at("h3", 5), 0, false},
		{"no data is behind any data", Position{Known: true, Empty: true}, at("h1", 0), -1, true},
		{"two empty nodes are equal", Position{Known: true, Empty: true}, Position{Known: true, Empty: true}, 0, true},
		{"an unknown position is never ordered", Position{}, at("h1", 5), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.a.Compare(tt.b)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Compare = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
