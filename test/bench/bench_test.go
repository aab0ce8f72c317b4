// Package bench measures the operator on the full local cluster: how long N
// resources take to become Ready, how many writes that costs per resource,
// how much heap the operator holds per resource, and how many writes a
// restart over converged resources makes (the target is zero).
//
//	make bench    # go test ./test/bench -run '^$' -bench . -benchtime 1x
//
// Figures come in pairs of sizes measured in one run, so compare their
// ratios (per-instance cost should stay flat) rather than absolute times on
// a shared machine.
package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	// `go test ./...` runs no benchmark: start no cluster then.
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	root, _ := cluster.RepoRoot()
	c, err := cluster.Start(context.Background(), cluster.Options{
		Profile: cluster.Full,
		CRDDir:  filepath.Join(root, "config", "crd", "bases"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		os.Exit(1)
	}
	testCluster = c
	code := m.Run()
	_ = c.Stop()
	if code == 0 {
		_ = c.RemoveDir()
	}
	os.Exit(code)
}

func BenchmarkAppServices(b *testing.B) {
	for _, n := range []int{10, 40} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			for range b.N {
				runAppServices(b, n)
			}
		})
	}
}

func runAppServices(b *testing.B, n int) {
	ctx := context.Background()
	c, err := client.New(testCluster.Config(), client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		b.Fatal(err)
	}
	ns := testenv.NewNamespace(b, c)
	op := testenv.StartOperator(b, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	heapBefore := heapInUse() // the operator running, its caches empty

	start := time.Now()
	for i := range n {
		app := &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%03d", i)},
			Spec: appv1.AppServiceSpec{
				Size: ptr.To[int32](1), Image: "nginx:1.27",
				Ports: []appv1.ServicePort{{Port: 80}},
			},
		}
		if err := c.Create(ctx, app); err != nil {
			b.Fatal(err)
		}
	}
	testenv.Eventually(b, 5*time.Minute, func() (bool, string) {
		list := &appv1.AppServiceList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, a := range list.Items {
			if meta.IsStatusConditionTrue(a.Status.Conditions, conditions.Ready) {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d Ready", ready, n)
	})
	converge := time.Since(start)
	op.Mutations.WaitQuiet(b, ns, 2*time.Second, time.Minute)
	writes := len(op.Mutations.In(ns))
	heap := heapInUse() - heapBefore

	// A restart passes over every converged resource: it must write nothing.
	op.Stop()
	before, err := testenv.ReconcileCount("appservice")
	if err != nil {
		b.Fatal(err)
	}
	restarted := time.Now()
	op2 := testenv.StartOperator(b, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(b, 5*time.Minute, func() (bool, string) {
		after, _ := testenv.ReconcileCount("appservice")
		return after-before >= float64(n), fmt.Sprintf("%v of %d passes after the restart", after-before, n)
	})
	resync := time.Since(restarted)
	time.Sleep(time.Second)
	steady := len(op2.Mutations.In(ns))
	op2.Stop()

	b.ReportMetric(float64(converge.Milliseconds())/float64(n), "ms-to-Ready/instance")
	b.ReportMetric(float64(writes)/float64(n), "writes/instance")
	b.ReportMetric(float64(heap)/float64(n)/1024, "heap-KiB/instance")
	b.ReportMetric(float64(resync.Milliseconds())/float64(n), "ms-resync/instance")
	b.ReportMetric(float64(steady), "writes-after-restart")
	if steady != 0 {
		b.Errorf("a restart over %d converged AppServices made %d writes, want 0: %v", n, steady, op2.Mutations.In(ns))
	}
}

// heapInUse is the process's live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
