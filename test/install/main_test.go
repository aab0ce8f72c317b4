// Package install installs the operator as a user does, on a local cluster
// whose pods really run: its image pushed to the cluster's registry, the
// Helm chart (and the kustomize tree) pointing at it, the manager in a pod
// of a namespace that enforces the restricted Pod Security Standard.
//
// The tests skip, saying why, where the real-node profile cannot run (see
// test/realpods); APP_OPERATOR_REALPODS=0 skips them anyway.
package install

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	skipReason  string
	// imageArchive is the operator's image, as `make image` writes it.
	imageArchive string
)

// auditPolicy records every write with its user (and, for a
// ServiceAccount token bound to a pod, the pod's name).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	if skipReason = cluster.RealPodsSkipReason(); skipReason != "" {
		testenv.PrintSummaryLines("install tests skipped: " + skipReason + "\n")
		return m.Run()
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "app-operator-image-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if imageArchive, err = buildImage(root, dir); err != nil {
		fmt.Fprintln(os.Stderr, "build the operator's image:", err)
		return 1
	}
	return cluster.RunTests(cluster.Options{
		Profile:     cluster.RealPods,
		Progress:    os.Stderr,
		AuditPolicy: auditPolicy,
	}, func(c *cluster.Cluster) int {
		testCluster = c
		return m.Run()
	})
}

// imageRef is the reference the image is built and pushed under; the
// chart's and the kustomize tree's image is set to it.
const (
	imageRepository = "app-operator"
	imageTag        = "e2e"
)

// buildImage builds the operator's image as `make image` does, into dir,
// and returns the archive's path.
func buildImage(root, dir string) (string, error) {
	return cluster.BuildOperatorImage(root, dir, imageRepository+":"+imageTag)
}

func needCluster(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip("the real-node profile cannot run here: " + skipReason)
	}
}

// pushImage pushes the image under imageRepository:tag.
func pushImage(t *testing.T, ctx context.Context, tag string) {
	t.Helper()
	if err := testCluster.PushImageArchive(ctx, imageArchive, imageRepository+":"+tag); err != nil {
		t.Fatal(err)
	}
}
