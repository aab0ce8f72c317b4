package main

import "testing"

func TestDefaultGCPercent(t *testing.T) {
	for _, tc := range []struct {
		gogc string
		want int
	}{
		{"", 30},
		{"100", 100},
		{"200", 200},
		{"25", 25},
		{"off", -1},
		{"-1", -1},
		// The Go runtime falls back to 100 on a value it cannot read.
		{"lots", 100},
	} {
		if got := defaultGCPercent(tc.gogc); got != tc.want {
			t.Errorf("GOGC=%q: %d, want %d", tc.gogc, got, tc.want)
		}
	}
}
