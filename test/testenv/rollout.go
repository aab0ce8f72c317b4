package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// WaitRolledOut waits until every Deployment in ns has finished its
// rollout (see RolledOut) and every pod of ns is one of theirs (see
// Orphans). The cluster's controllers may finish one seconds after the
// operator's last write to it (they back off after conflicting writes),
// the garbage collector removes what a deleted Deployment left later
// still, and the operator reports on each step: a test that expects the
// operator to fall silent waits for this first.
func WaitRolledOut(t testing.TB, c client.Client, ns string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() (bool, string) {
		ctx := context.Background()
		deployments := &appsv1.DeploymentList{}
		if err := c.List(ctx, deployments, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for i := range deployments.Items {
			if ok, why := RolledOut(&deployments.Items[i]); !ok {
				return false, fmt.Sprintf("Deployment %s: %s", deployments.Items[i].Name, why)
			}
		}
		sets := &appsv1.ReplicaSetList{}
		if err := c.List(ctx, sets, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		if orphans := Orphans(deployments.Items, sets.Items, pods.Items); len(orphans) > 0 {
			return false, "pods not (or no longer) of a Deployment: " + strings.Join(orphans, ", ")
		}
		return true, ""
	})
}

// Orphans returns the names of the pods that a ReplicaSet controls whose
// Deployment is gone (or was replaced by one of the same name), or that
// are being deleted: pods the garbage collector or the kubelet has yet to
// remove, which still count wherever pods are listed by their labels.
func Orphans(deployments []appsv1.Deployment, sets []appsv1.ReplicaSet, pods []corev1.Pod) []string {
	live := map[types.UID]bool{}
	for _, d := range deployments {
		live[d.UID] = true
	}
	for _, rs := range sets {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.Kind == "Deployment" && live[ref.UID] {
			live[rs.UID] = true
		}
	}
	var out []string
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		switch {
		case p.DeletionTimestamp != nil:
			out = append(out, p.Name+" (being deleted)")
		case ref != nil && ref.Kind == "ReplicaSet" && !live[ref.UID]:
			out = append(out, p.Name)
		}
	}
	return out
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
