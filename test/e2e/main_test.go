// Package e2e runs the operator against the full local cluster: controller
// manager, scheduler and a kwok node make Deployments roll out, pods turn
// Running and the garbage collector delete children.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/app-operator/app-operator/test/cluster"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := cluster.Start(context.Background(), cluster.Options{
		Profile:  cluster.Full,
		Progress: os.Stderr,
		CRDDir:   filepath.Join(mustRepoRoot(), "config", "crd", "bases"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		return 1
	}
	testCluster = c
	code := m.Run()
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

func mustRepoRoot() string {
	root, err := cluster.RepoRoot()
	if err != nil {
		panic(err)
	}
	return root
}
