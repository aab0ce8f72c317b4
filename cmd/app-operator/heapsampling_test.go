package main

import "testing"

func TestHeapSamplingAsked(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                                  false,
		"gctrace=1":                         false,
		"memprofilerate=524288":             true,
		"gctrace=1,memprofilerate=1":        true,
		"gctrace=1, memprofilerate=0":       true,
		"memprofilerate":                    false,
		"notmemprofilerate=1,http2client=0": false,
	} {
		if got := heapSamplingAsked(godebug); got != want {
			t.Errorf("GODEBUG=%q: got %v, want %v", godebug, got, want)
		}
	}
}
