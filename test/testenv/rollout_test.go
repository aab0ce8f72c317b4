package testenv

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestRolledOut(t *testing.T) {
	done := appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}
	for _, tc := range []struct {
		name     string
		replicas *int32
		status   func(s *appsv1.DeploymentStatus)
		want     bool
	}{
		{"rolled out", ptr.To[int32](3), func(*appsv1.DeploymentStatus) {}, true},
		{"spec not observed", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.ObservedGeneration = 1 }, false},
		{"replica not updated", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.UpdatedReplicas = 2 }, false},
		{"old pod left", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.Replicas = 4 }, false},
		{"replica not available", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.AvailableReplicas = 2 }, false},
		{"pod terminating", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.TerminatingReplicas = ptr.To[int32](1) }, false},
		{"none terminating", ptr.To[int32](3), func(s *appsv1.DeploymentStatus) { s.TerminatingReplicas = ptr.To[int32](0) }, true},
		{"replicas unset means one", nil, func(s *appsv1.DeploymentStatus) { s.Replicas, s.UpdatedReplicas, s.AvailableReplicas = 1, 1, 1 }, true},
		{"scaled to zero", ptr.To[int32](0), func(s *appsv1.DeploymentStatus) { s.Replicas, s.UpdatedReplicas, s.AvailableReplicas = 0, 0, 0 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: tc.replicas}, Status: done}
			tc.status(&d.Status)
			if got, why := RolledOut(d); got != tc.want {
				t.Errorf("RolledOut = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

func TestReplicasOwners(t *testing.T) {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		e := metav1.ManagedFieldsEntry{Manager: manager}
		if fields != "" {
			e.FieldsV1 = metav1.NewFieldsV1(fields)
		}
		return e
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry("operator", `{"f:spec":{"f:replicas":{},"f:template":{}}}`),
		entry("hpa", `{"f:spec":{"f:replicas":{}}}`),
		entry("labels", `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:selector":{}}}`),
		entry("status", `{"f:status":{"f:replicas":{}}}`),
		entry("none", ""),
	}}}
	if got, want := ReplicasOwners(t, d), []string{"hpa", "operator"}; !slices.Equal(got, want) {
		t.Errorf("owners %v, want %v", got, want)
	}
	if got := ReplicasOwners(t, &appsv1.Deployment{}); len(got) != 0 {
		t.Errorf("owners of a Deployment without managedFields: %v, want none", got)
	}
}
