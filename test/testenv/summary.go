package testenv

import (
	"fmt"
	"os"
	"sync"
)

// SummaryFileEnv names the environment variable holding a file that every
// summary line is also appended to. `go test ./...` shows the output of a
// passing package only with -v, so `make test` sets it and prints the file
// at the end: the summaries reach the CI log either way.
const SummaryFileEnv = "APP_OPERATOR_TEST_SUMMARY"

// Tally counts the cases of one family of checks (bad inputs refused,
// children accepted by a dry run) that passed, for a summary line printed
// once after the run.
type Tally struct {
	// Format holds two %d: the passed cases and all of them.
	Format string

	mu            sync.Mutex
	passed, total int
}

// Add records one case.
func (t *Tally) Add(passed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	if passed {
		t.passed++
	}
}

// Counts returns the passed cases and all of them.
func (t *Tally) Counts() (passed, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.passed, t.total
}

// PrintSummaries prints one line per tally that counted any case, to
// stdout and to the file named by SummaryFileEnv, if set. Call it from
// TestMain after m.Run.
func PrintSummaries(tallies ...*Tally) {
	var lines string
	for _, t := range tallies {
		if passed, total := t.Counts(); total > 0 {
			lines += fmt.Sprintf(t.Format, passed, total) + "\n"
		}
	}
	PrintSummaryLines(lines)
}

// PrintSummaryLines prints lines, each ending in a newline, to stdout and
// to the file named by SummaryFileEnv, if set.
func PrintSummaryLines(lines string) {
	if lines == "" {
		return
	}
	fmt.Print(lines)
	if path := os.Getenv(SummaryFileEnv); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "summary:", err)
			return
		}
		defer f.Close()
		if _, err := f.WriteString(lines); err != nil {
			fmt.Fprintln(os.Stderr, "summary:", err)
		}
	}
}
