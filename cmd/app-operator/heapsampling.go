package main

import (
	"os"
	"runtime"
	"strings"
)

// sampleHeapOnlyIfAsked turns off the sampling of heap allocations for
// the heap profile unless GODEBUG sets memprofilerate: the samples, and
// the table of their call stacks, cost the manager memory that nothing
// reads unless someone profiles its heap.
func sampleHeapOnlyIfAsked() {
	if !heapSamplingAsked(os.Getenv("GODEBUG")) {
		runtime.MemProfileRate = 0
	}
}

// heapSamplingAsked reports whether godebug, a GODEBUG value, sets
// memprofilerate (the Go runtime has then set runtime.MemProfileRate).
func heapSamplingAsked(godebug string) bool {
	for setting := range strings.SplitSeq(godebug, ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(setting), "="); ok && name == "memprofilerate" {
			return true
		}
	}
	return false
}
