package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// WaitRolledOut waits until every Deployment in ns has finished its
// rollout (see RolledOut). The cluster's controllers may finish one
// seconds after the operator's last write to it (they back off after
// conflicting writes), and the operator reports on each step: a test
// that expects the operator to fall silent waits for this first.
func WaitRolledOut(t testing.TB, c client.Client, ns string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() (bool, string) {
		list := &appsv1.DeploymentList{}
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			if ok, why := RolledOut(&list.Items[i]); !ok {
				return false, fmt.Sprintf("Deployment %s: %s", list.Items[i].Name, why)
			}
		}
		return true, ""
	})
}

// RolledOut reports whether d has finished its rollout as kubectl rollout
// status judges it (its spec observed, every replica updated and
// available, no old pod left), and no pod of it is terminating; if not,
// why. It is written apart from the operator's own reading of a rollout
// (package status), which the tests that use it check.
func RolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("generation %d not observed yet (%d)", d.Generation, s.ObservedGeneration)
	case s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas != want:
		return false, fmt.Sprintf("%d wanted, %d updated, %d in all, %d available", want, s.UpdatedReplicas, s.Replicas, s.AvailableReplicas)
	case s.TerminatingReplicas != nil && *s.TerminatingReplicas > 0:
		return false, fmt.Sprintf("%d pods terminating", *s.TerminatingReplicas)
	}
	return true, ""
}

// ReplicasOwners returns, sorted, the field managers that own
// spec.replicas of d, read from its managedFields.
func ReplicasOwners(t testing.TB, d *appsv1.Deployment) []string {
	t.Helper()
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		fields := &fieldpath.Set{}
		if err := fields.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			t.Fatalf("managedFields of %s/%s, manager %s: %v", d.Namespace, d.Name, mf.Manager, err)
		}
		if fields.Has(replicas) {
			out = append(out, mf.Manager)
		}
	}
	return Sorted(out)
}
