package chaos

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// conflictWindow is how long the other writers keep at it.
const conflictWindow = 20 * time.Second

// TestConflicts runs writers that fight the operator over the same
// children: one edits a field the operator owns with updates (so that the
// operator's view goes stale under it), one deletes children, one applies
// with forced ownership under its own field manager. Once they stop, the
// operator converges, with no duplicate, and goes quiet: no error loop.
func TestConflicts(t *testing.T) {
	t.Parallel()
	scenario(t, famConflict)
	m := startManaged(t)
	c, ns, p := m.c, m.ns, m.p
	crs := convergeSamples(t, c, ns, famConflict)

	ctx := context.Background()
	targets := make([]child, 0, len(crs))
	for _, cr := range crs {
		targets = append(targets, desired(t, cr)...)
	}
	var edits, deletes, applies atomic.Int32
	writers := newLoops()
	writer := func(pause time.Duration, do func(i int, ch child)) {
		writers.every(pause, func(i int) { do(i, targets[i%len(targets)]) })
	}
	writer(100*time.Millisecond, func(_ int, ch child) {
		if u, err := liveChild(ctx, c, ns, ch); err == nil && u != nil {
			if patch, err := editPatch(u); err == nil {
				// A JSON patch with a resourceVersion test: an update
				// racing the operator's.
				if c.Update(ctx, patched(u, patch)) == nil {
					edits.Add(1)
				}
			}
		}
	})
	writer(700*time.Millisecond, func(i int, _ child) {
		ch := targets[(i*7)%len(targets)]
		if u, err := liveChild(ctx, c, ns, ch); err == nil && u != nil {
			if c.Delete(ctx, u) == nil {
				deletes.Add(1)
			}
		}
	})
	writer(300*time.Millisecond, func(i int, _ child) {
		ch := targets[(i*3)%len(targets)]
		if u, err := liveChild(ctx, c, ns, ch); err == nil && u != nil {
			if patch, err := editPatch(u); err == nil {
				edited := patched(u, patch)
				// With the uid and resourceVersion it was read at, the
				// apply never creates: a child deleted meanwhile is the
				// operator's to create, not a foreign object of its name.
				// (A resourceVersion alone does not stop the API server
				// from creating the object; a uid that no object has
				// does.)
				ac := map[string]any{"apiVersion": edited.GetAPIVersion(), "kind": edited.GetKind(),
					"metadata": map[string]any{"name": edited.GetName(), "namespace": ns, "uid": string(edited.GetUID()), "resourceVersion": edited.GetResourceVersion()}}
				for _, f := range []string{"spec", "data"} {
					if v, ok := edited.Object[f]; ok {
						ac[f] = v
					}
				}
				if c.Apply(ctx, client.ApplyConfigurationFromUnstructured(asUnstructured(ac)), client.FieldOwner("chaos-writer"), client.ForceOwnership) == nil {
					applies.Add(1)
				}
			}
		}
	})
	time.Sleep(conflictWindow)
	writers.stop()
	during := len(p.Writes(work))

	stopped := time.Now()
	took := waitConverged(t, c, ns, famConflict, 2*time.Minute)
	// The Deployments the writers edited may still be rolling back: the
	// cluster's controllers back off after conflicting writes, and may
	// start the last pods seconds after the writers stopped. The
	// operator reports on each step of a rollout, so it is done only
	// once they are.
	testenv.WaitRolledOut(t, c, ns, 2*time.Minute)
	rolled := time.Since(stopped)
	// No error loop: the operator settles, then stays silent.
	waitQuiet(t, p, ns, 5*time.Second, time.Minute)
	settled := len(p.Writes(work))
	time.Sleep(10 * time.Second)
	after := p.Writes(work)[settled:]
	if len(after) > 0 {
		t.Errorf("the operator kept writing after it converged: %v", after)
	}
	waitConverged(t, c, ns, famConflict, time.Minute)
	timing("conflicts: %d updates, %d deletes, %d forced applies by other writers in %s; the operator made %d writes, converged %.1fs after they stopped (Deployments rolled out after %.1fs), then %d writes in 10s",
		edits.Load(), deletes.Load(), applies.Load(), conflictWindow, during, took.Seconds(), rolled.Seconds(), len(after))
}

// patched returns a copy of u with the one-operation JSON patch of
// editPatch applied locally; it keeps u's resourceVersion, so an update
// with it fails if u changed since it was read.
func patched(u *unstructured.Unstructured, patch []byte) *unstructured.Unstructured {
	var ops []struct {
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	out := u.DeepCopy()
	if err := json.Unmarshal(patch, &ops); err != nil || len(ops) != 1 {
		return out
	}
	var cur any = out.Object
	parts := strings.Split(strings.TrimPrefix(ops[0].Path, "/"), "/")
	for i, part := range parts {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		last := i == len(parts)-1
		switch v := cur.(type) {
		case map[string]any:
			if last {
				v[part] = ops[0].Value
			}
			cur = v[part]
		case []any:
			n, err := strconv.Atoi(part)
			if err != nil || n >= len(v) {
				return out
			}
			if last {
				v[n] = ops[0].Value
			}
			cur = v[n]
		}
	}
	return out
}

func asUnstructured(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}
