package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// TestOperatorAbsent changes the cluster while the operator is stopped:
// children deleted and edited, a resource deleted. Once it starts again,
// all is reconciled.
func TestOperatorAbsent(t *testing.T) {
	t.Parallel()
	scenario(t, famAbsent)
	m := startManaged(t)
	c, ns, p := m.c, m.ns, m.p
	crs := convergeSamples(t, c, ns, famAbsent)
	m.op.Stop(t)

	ctx := context.Background()
	var changes []string
	var gone client.Object
	for i, cr := range crs {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		if kindOf(cr) == "Memcached" {
			// The garbage collector deletes its children.
			if err := c.Delete(ctx, cr); err != nil {
				t.Fatal(err)
			}
			gone = cr
			changes = append(changes, "deleted "+kindOf(cr)+" "+cr.GetName())
			continue
		}
		// Every other resource loses one child and has another edited,
		// each time of another kind.
		chs := desired(t, cr)
		del, edit := chs[i%len(chs)], chs[(i+1)%len(chs)]
		u, err := liveChild(ctx, c, ns, del)
		if err != nil || u == nil {
			t.Fatalf("%s: %v", del, err)
		}
		if err := c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, "deleted "+del.String())
		if u, err = liveChild(ctx, c, ns, edit); err != nil || u == nil {
			t.Fatalf("%s: %v", edit, err)
		}
		patch, err := editPatch(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, "edited "+edit.String())
	}
	// The children of the deleted resource go first.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		a := auditNamespace(t, c, ns)
		return len(a.orphaned) == 0, fmt.Sprintf("children of the deleted %s left: %v", gone.GetName(), a.orphaned)
	})

	m.restart(t)
	took := waitConverged(t, c, ns, famAbsent, 2*time.Minute)
	// The Ready conditions above may be the ones written before the stop:
	// once the operator is done, they must still hold.
	waitQuiet(t, p, ns, 3*time.Second, time.Minute)
	waitConverged(t, c, ns, famAbsent, time.Minute)
	timing("operator absent: %d changes made while stopped, all reconciled %.1fs after it started: %v", len(changes), took.Seconds(), changes)
}
