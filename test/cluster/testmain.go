package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Run is a test package's TestMain on a local cluster of its own: it starts
// one with opts, hands it to use, runs the package's tests, stops the
// cluster and exits with the tests' code. The cluster's folder, with its
// logs, is kept when a test failed.
func Run(m *testing.M, opts Options, use func(*Cluster)) {
	c, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		os.Exit(1)
	}
	use(c)
	code := m.Run()
	_ = c.Stop()
	if code == 0 {
		_ = c.RemoveDir()
	}
	os.Exit(code)
}
