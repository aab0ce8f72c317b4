//go:build !keepstartuppages

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReleaseStartupPages checks that the executable's pages are unmapped
// and that the program runs on, its code mapped back as it runs.
func TestReleaseStartupPages(t *testing.T) {
	before := rssFileKiB(t)
	releaseStartupPages()
	after := rssFileKiB(t)
	if after >= before {
		t.Errorf("file-backed RSS %d KiB after releasing the executable's pages, %d before", after, before)
	}
}

// rssFileKiB reads the file-backed part of this process's RSS.
func rssFileKiB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			kib, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return kib
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}
