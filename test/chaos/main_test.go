// Package chaos runs the operator on the full local cluster and breaks
// things around it: children deleted, edited and detached, the operator
// killed mid-work or absent, the API server stopped, the leader killed,
// concurrent writers, specs the cluster cannot satisfy. After every fault
// it checks that the operator converges to the state it reaches without
// faults: no child lost, duplicated or orphaned, and a truthful status.
//
// Each family prints one summary line after the run, from what its tests
// observed.
package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	// managerBin is the manager binary, for the scenarios that run the
	// operator as a separate process.
	managerBin string
)

// extraNodes are fake nodes added to the one the cluster starts with, so
// that every scenario's pods find room side by side.
const extraNodes = 3

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// The scenarios wait on the cluster far more than they compute: run
	// them all at once unless -parallel says otherwise (its default is
	// GOMAXPROCS, 2 on a small machine).
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "16")
	}
	// The operators under test log to their tests; client-go's own
	// reflectors, outside any test, log nowhere.
	ctrllog.SetLogger(logr.Discard())
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir, err := os.MkdirTemp("", "chaos-manager-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	if managerBin, err = testenv.BuildManager(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cluster.RunTests(cluster.Options{
		Profile:  cluster.Full,
		Progress: os.Stderr,
		CRDDir:   filepath.Join(root, "config", "crd", "bases"),
	}, func(c *cluster.Cluster) int {
		testCluster = c
		if err := addNodes(c, extraNodes); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		printSummary()
		return code
	})
}

// addNodes registers n more kwok nodes like the cluster's own and waits
// until they are Ready.
func addNodes(c *cluster.Cluster, n int) error {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for i := 1; i <= n; i++ {
		name := "kwok-node-" + strconv.Itoa(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, nd := range nodes.Items {
				for _, cond := range nd.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		if ready == n+1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d nodes Ready (%v)", ready, n+1, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// family tallies what the scenarios of one family observed.
type family struct {
	name                      string
	run, survived             int
	lost, duplicated, orphans int
}

var (
	tallyMu  sync.Mutex
	families = map[string]*family{}
	// timings are lines such as restore times, printed after the summary.
	timings []string
)

// Family names, in the order the summary prints them.
const (
	famIdle     = "idle stability"
	famHeal     = "self-healing"
	famKill     = "kill mid-work"
	famOutage   = "API server outage"
	famAbsent   = "operator absent"
	famFailover = "leader failover"
	famConflict = "conflicts"
	famUnsat    = "unsatisfiable spec"
)

var familyOrder = []string{famIdle, famHeal, famKill, famOutage, famAbsent, famFailover, famConflict, famUnsat}

// scenario counts t as one scenario of the family: survived if it passes.
func scenario(t *testing.T, fam string) {
	t.Helper()
	tallyMu.Lock()
	f := families[fam]
	if f == nil {
		f = &family{name: fam}
		families[fam] = f
	}
	f.run++
	tallyMu.Unlock()
	t.Cleanup(func() {
		if !t.Failed() {
			tallyMu.Lock()
			f.survived++
			tallyMu.Unlock()
		}
	})
}

// record adds what an audit found to the family's figures.
func record(fam string, a audit) {
	tallyMu.Lock()
	defer tallyMu.Unlock()
	f := families[fam]
	if f == nil {
		f = &family{name: fam}
		families[fam] = f
	}
	f.lost += len(a.lost)
	f.duplicated += len(a.duplicated)
	f.orphans += len(a.orphaned)
}

// timing keeps a measured duration for the printout after the run.
func timing(format string, args ...any) {
	tallyMu.Lock()
	defer tallyMu.Unlock()
	timings = append(timings, fmt.Sprintf(format, args...))
}

func printSummary() {
	tallyMu.Lock()
	defer tallyMu.Unlock()
	sort.Strings(timings)
	var lines strings.Builder
	for _, l := range timings {
		fmt.Fprintln(&lines, "chaos figures:", l)
	}
	var total family
	for _, name := range familyOrder {
		f := families[name]
		if f == nil {
			continue
		}
		fmt.Fprintf(&lines, "chaos %s: scenarios survived %d/%d, children lost %d, duplicated %d, orphaned %d\n",
			f.name, f.survived, f.run, f.lost, f.duplicated, f.orphans)
		total.run += f.run
		total.survived += f.survived
		total.lost += f.lost
		total.duplicated += f.duplicated
		total.orphans += f.orphans
	}
	if total.run == 0 {
		return
	}
	fmt.Fprintf(&lines, "chaos scenarios survived %d/%d, children lost %d, duplicated %d, orphaned %d\n",
		total.survived, total.run, total.lost, total.duplicated, total.orphans)
	testenv.PrintSummaryLines(lines.String())
}
