package chaos

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/app-operator/app-operator/test/testenv"
)

// outage is how long the API server stays down.
const outage = 30 * time.Second

// TestAPIServerOutage stops the API server for 30 s while the operator
// converges, and starts it again. The operator must come back by itself,
// converge, and delete nothing because of the errors it saw.
//
// It is not parallel: every other scenario would see the outage too.
func TestAPIServerOutage(t *testing.T) {
	scenario(t, famOutage)
	m := startManaged(t)
	c, ns, p := m.c, m.ns, m.p

	crs := append(samples(t, ns), manyResources(t, ns, 20)...)
	create(t, c, crs...)
	// Mid-converge: some children are there, not all. The outage starts
	// once the first are made, however long the operator takes to start.
	var before map[string]types.UID
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		before = childUIDs(t, c, ns)
		return len(before) > 0, "no child made yet"
	})
	if err := testCluster.RestartAPIServer(context.Background(), outage); err != nil {
		t.Fatal(err)
	}
	took := waitConverged(t, c, ns, famOutage, 4*time.Minute)
	waitQuiet(t, p, ns, 3*time.Second, time.Minute)
	waitConverged(t, c, ns, famOutage, time.Minute)
	if exited, err := m.op.Exited(); exited {
		t.Fatalf("the operator exited during the outage: %v", err)
	}
	after := childUIDs(t, c, ns)
	if gone := missingOrReplaced(before, after); len(gone) > 0 {
		t.Errorf("children present before the outage were deleted or replaced: %v", gone)
	}
	failed := 0
	for _, w := range p.Writes(work) {
		if w.method == http.MethodDelete {
			t.Errorf("the operator deleted something: %s", w)
		}
		if w.code >= 500 {
			failed++
		}
	}
	timing("API server outage: %d resources, %d of their children there when it stopped for %s; converged %.1fs after it was back (%d writes failed, 0 deletes)",
		len(crs), len(before), outage, took.Seconds(), failed)
}
