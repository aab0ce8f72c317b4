// Package realpods runs the operator against the local cluster's RealPods
// profile, where pods really run (kubelet, containerd, runc, CNI bridge,
// kube-proxy, local image registry): the pages MyWeb serves are fetched over
// TCP, through the NodePort on 127.0.0.1 and at the pod IPs.
//
// The tests skip, saying why, on a machine that cannot run the profile (not
// root, no cgroups, `make realnode` not run); set APP_OPERATOR_REALPODS=0
// to skip them anyway.
package realpods

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	skipReason  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The tests' own clients log nothing; the operators they start log
	// through testenv.
	ctrllog.SetLogger(logr.Discard())
	// The Redis clients' pool logs each refused dial; the workloads record
	// every failed operation themselves, and these lines would bury the
	// tests' own output.
	redis.SetLogger(quietRedis{})
	if skipReason = cluster.RealPodsSkipReason(); skipReason != "" {
		// In the summary that `make test` prints at its end, since go test
		// shows a passing package's output only with -v.
		testenv.PrintSummaryLines("real-pods tests skipped: " + skipReason + "\n")
		return m.Run()
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nodes, err := nodesWanted()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := cluster.Options{
		Profile:  cluster.RealPods,
		Progress: os.Stderr,
		CRDDir:   filepath.Join(root, "config", "crd", "bases"),
		Nodes:    nodes,
		// An S3 object store for the tests that write to S3; it needs
		// OBJECTSTORE, the store's binary.
		ObjectStore: true,
	}
	if opts.MaxPods, err = maxPodsWanted(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(BenchStatefulEnv) != "" {
		// The bench names each write the operator makes at rest.
		opts.AuditPolicy = benchAuditPolicy
	}
	if nodes > 1 {
		// A node that stops renewing its lease is NotReady after 40 s,
		// as in a cluster tuned for failover, rather than after 2 min.
		opts.ControllerManagerArgs = []string{"--node-monitor-grace-period=40s"}
	}
	return cluster.RunTests(opts, func(c *cluster.Cluster) int {
		testCluster = c
		code := m.Run()
		printFaultMatrix()
		return code
	})
}

// NodesEnv sets how many real nodes the tests run on: one by default; the
// tests of several nodes (TestNodes...) run when it is 3 or more, and skip
// otherwise.
const NodesEnv = "APP_OPERATOR_NODES"

func nodesWanted() (int, error) {
	v := os.Getenv(NodesEnv)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a number of nodes, 1 or more", NodesEnv, v)
	}
	return n, nil
}

// MaxPodsEnv sets the kubelets' maxPods (see cluster.Options.MaxPods):
// their default, 110, when unset. The data services' scale bench needs
// more.
const MaxPodsEnv = "APP_OPERATOR_MAX_PODS"

func maxPodsWanted() (int, error) {
	v := os.Getenv(MaxPodsEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a number of pods", MaxPodsEnv, v)
	}
	return n, nil
}

// needNodes skips the test unless the cluster has at least n nodes.
func needNodes(t *testing.T, n int) {
	t.Helper()
	needCluster(t)
	if got := len(testCluster.NodeNames()); got < n {
		t.Skipf("needs %d real nodes, the cluster has %d (%s=%d runs it)", n, got, NodesEnv, n)
	}
}

// needCluster skips the test where the profile cannot run.
func needCluster(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip("the real-node profile cannot run here: " + skipReason)
	}
}

// quietRedis drops the Redis clients' own log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
