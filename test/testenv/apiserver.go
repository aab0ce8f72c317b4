package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/cluster"
)

// RunAgainstAPIServer runs the tests of m against a kube-apiserver of
// their own (the APIOnly profile: no controller runs) with the operator's
// CRDs installed, for a TestMain: setUp receives the cluster and a client
// of it before the tests run, and the tallies are printed after. The
// components' logs stay when a test failed. It returns m's exit code.
func RunAgainstAPIServer(m *testing.M, setUp func(c *cluster.Cluster, k8s client.Client), tallies ...*Tally) int {
	ctx := context.Background()
	repoRoot, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := cluster.Start(ctx, cluster.Options{Profile: cluster.APIOnly})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the local cluster:", err)
		}
	}()
	if err := c.InstallCRDs(ctx, filepath.Join(repoRoot, "config", "crd", "bases")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8s, err := client.New(c.Config(), client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	setUp(c, k8s)
	code := m.Run()
	PrintSummaries(tallies...)
	if code == 0 {
		defer func() { _ = c.RemoveDir() }()
	} else {
		fmt.Fprintln(os.Stderr, "component logs kept in", c.Dir)
	}
	return code
}
