package cluster

import (
	"context"
	"fmt"
	"os"
)

// RunTests is for a test binary's TestMain: it starts a cluster with opts,
// calls run with it (which runs the tests and returns their exit code),
// then stops the cluster. After a run that passed it removes the run
// folder; after one that failed it keeps it and says so on stderr. It
// returns run's exit code, or 1 if the cluster did not start.
func RunTests(opts Options, run func(*Cluster) int) int {
	c, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		return 1
	}
	code := run(c)
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the local cluster:", err)
	}
	if code == 0 {
		_ = c.RemoveDir()
	} else {
		fmt.Fprintln(os.Stderr, "component logs kept in", c.Dir)
	}
	return code
}
