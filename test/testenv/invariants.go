package testenv

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusInvariants returns what is wrong with the status of obj, a resource
// of any app-operator kind that the operator has reconciled at least once:
//   - the Ready condition is present;
//   - status.observedGeneration (absent until a pass succeeds) is not above
//     metadata.generation;
//   - every condition carries an observedGeneration, not above
//     metadata.generation;
//   - Ready is not True while the status is behind the spec: a True Ready
//     describes the generation status.observedGeneration names, and that
//     one only. A status written for an older generation may stay True
//     until the operator catches up, but it never claims a newer one.
func StatusInvariants(obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	gen := obj.GetGeneration()
	name := fmt.Sprintf("%s %s/%s (generation %d)", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), gen)
	var errs []error
	// Absent until a pass succeeds: a resource that never converged has
	// observed no generation yet, and its Ready cannot be True (below).
	observed, _, _ := unstructured.NestedInt64(u, "status", "observedGeneration")
	if observed > gen {
		errs = append(errs, fmt.Errorf("status.observedGeneration %d is above the generation", observed))
	}
	conds, _, _ := unstructured.NestedSlice(u, "status", "conditions")
	var ready map[string]any
	for _, c := range conds {
		m, _ := c.(map[string]any)
		og, ok := m["observedGeneration"].(int64)
		switch {
		case !ok || og <= 0:
			errs = append(errs, fmt.Errorf("condition %v carries no observedGeneration", m["type"]))
		case og > gen:
			errs = append(errs, fmt.Errorf("condition %v has observedGeneration %d, above the generation", m["type"], og))
		}
		if m["type"] == "Ready" {
			ready = m
		}
	}
	if ready == nil {
		errs = append(errs, errors.New("no Ready condition"))
	} else if ready["status"] == "True" {
		if og, _ := ready["observedGeneration"].(int64); og != observed {
			errs = append(errs, fmt.Errorf("Ready=True for generation %d while status.observedGeneration is %d", og, observed))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// CheckStatusInvariants fails the test (without stopping it) when the
// status of obj breaks one of the StatusInvariants.
func CheckStatusInvariants(t testing.TB, obj client.Object) {
	t.Helper()
	if err := StatusInvariants(obj); err != nil {
		t.Errorf("status invariant broken: %v", err)
	}
}
