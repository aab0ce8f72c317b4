package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// restoreTimeout bounds how long the operator may take to repair one fault.
const restoreTimeout = 30 * time.Second

// fault breaks a child; the operator must restore it.
type fault struct {
	name  string
	apply func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error
}

var faults = []fault{
	{"delete", func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
		uid := u.GetUID()
		return c.Delete(ctx, u, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}},
	{"edit an owned field", func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
		patch, err := editPatch(u)
		if err != nil {
			return err
		}
		return c.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch))
	}},
	{"strip owner reference and labels", func(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
		return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null,"labels":null}}`)))
	}},
}

// editPatch returns a JSON patch that changes one field the operator sets
// on the child u, chosen by kind: one that matters to what the child does.
func editPatch(u *unstructured.Unstructured) ([]byte, error) {
	var op map[string]any
	switch u.GetKind() {
	case "Deployment":
		op = map[string]any{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "chaos/edited:1"}
	case "Service":
		op = map[string]any{"op": "replace", "path": "/spec/selector/app.kubernetes.io~1instance", "value": "chaos-edited"}
	case "ConfigMap":
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		for k := range data {
			op = map[string]any{"op": "replace", "path": "/data/" + strings.ReplaceAll(k, "/", "~1"), "value": "chaos edited"}
			break
		}
	case "HorizontalPodAutoscaler":
		maxReplicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "maxReplicas")
		op = map[string]any{"op": "replace", "path": "/spec/maxReplicas", "value": maxReplicas + 3}
	case "PodDisruptionBudget":
		op = map[string]any{"op": "replace", "path": "/spec/maxUnavailable", "value": 2}
	case "ServiceAccount":
		op = map[string]any{"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "chaos-edited"}
	}
	if op == nil {
		return nil, fmt.Errorf("no field to edit on %s %s", u.GetKind(), u.GetName())
	}
	return json.Marshal([]any{op})
}

// TestSelfHealing breaks every child of every sample in every way of
// faults, one at a time, and times how long the operator takes to restore
// it.
func TestSelfHealing(t *testing.T) {
	t.Parallel()
	scenario(t, famHeal)
	c, ns, _, crs := readyInProcess(t)

	t.Run("each kind", func(t *testing.T) {
		for _, cr := range crs {
			t.Run(kindOf(cr), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
					t.Fatal(err)
				}
				for _, ch := range desired(t, cr) {
					for _, f := range faults {
						u, err := liveChild(ctx, c, ns, ch)
						if err != nil || u == nil {
							t.Fatalf("%s before %q: %v", ch, f.name, err)
						}
						oldUID := u.GetUID()
						start := time.Now()
						if err := f.apply(ctx, c, u); err != nil {
							t.Fatalf("%s: %s: %v", ch, f.name, err)
						}
						took := timeUntil(t, start, restoreTimeout, func() (bool, string) {
							ok, why := restored(ctx, c, ns, ch)
							if ok && f.name == "delete" {
								// The old one may still be on its way out.
								u, _ := liveChild(ctx, c, ns, ch)
								ok, why = u != nil && u.GetUID() != oldUID, "the deleted "+ch.String()+" is still there"
							}
							return ok, fmt.Sprintf("after %q: %s", f.name, why)
						})
						t.Logf("%s: %s restored in %.3fs", ch, f.name, took.Seconds())
						restores.add(ch.kind, f.name, took)
						if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
							t.Fatal(err)
						}
						testenv.CheckStatusInvariants(t, cr)
					}
				}
			})
		}
	})
	waitAllReady(t, c, ns, 2*time.Minute)
	waitClean(t, c, ns, famHeal, 30*time.Second)
	for _, line := range restores.lines() {
		timing("self-healing: %s", line)
	}
}

// restoreTimes collects restore times by child kind and fault.
type restoreTimes struct {
	mu   sync.Mutex
	took map[string][]time.Duration // child kind -> times
	n    map[string]int             // fault -> cases
}

var restores restoreTimes

func (r *restoreTimes) add(kind, fault string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.took == nil {
		r.took, r.n = map[string][]time.Duration{}, map[string]int{}
	}
	r.took[kind] = append(r.took[kind], d)
	r.n[fault]++
}

// lines returns, per child kind, how many faults were repaired and the
// median and longest time to restore.
func (r *restoreTimes) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.took)+1)
	for kind, ds := range r.took {
		slices.Sort(ds)
		out = append(out, fmt.Sprintf("%-23s %2d faults restored, median %.2fs, max %.2fs", kind, len(ds), ds[len(ds)/2].Seconds(), ds[len(ds)-1].Seconds()))
	}
	faults := make([]string, 0, len(r.n))
	for f, n := range r.n {
		faults = append(faults, fmt.Sprintf("%s %d", f, n))
	}
	slices.Sort(faults)
	out = append(out, "faults: "+strings.Join(faults, ", "))
	return out
}
