// Package e2e runs the operator against the full local cluster: controller
// manager, scheduler and a kwok node make Deployments roll out, pods turn
// Running and the garbage collector delete children.
package e2e

import (
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
	return cluster.RunTests(cluster.Options{
		Profile:  cluster.Full,
		Progress: os.Stderr,
		CRDDir:   filepath.Join(mustRepoRoot(), "config", "crd", "bases"),
	}, func(c *cluster.Cluster) int {
		testCluster = c
		return m.Run()
	})
}

func mustRepoRoot() string {
	root, err := cluster.RepoRoot()
	if err != nil {
		panic(err)
	}
	return root
}
