package testenv

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

func TestOrphans(t *testing.T) {
	controlled := func(kind string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: string(uid), UID: uid, Controller: ptr.To(true)}}
	}
	deployments := []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "d1"}}}
	sets := []appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-1", UID: "rs1", OwnerReferences: controlled("Deployment", "d1")}},
		// The ReplicaSet of a Deployment of the same name, deleted and made again.
		{ObjectMeta: metav1.ObjectMeta{Name: "web-0", UID: "rs0", OwnerReferences: controlled("Deployment", "d0")}},
	}
	pod := func(name string, refs []metav1.OwnerReference, deleted bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}
		if deleted {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("current", controlled("ReplicaSet", "rs1"), false),
		pod("of-a-deleted-deployment", controlled("ReplicaSet", "rs0"), false),
		pod("of-a-deleted-replicaset", controlled("ReplicaSet", "rs9"), false),
		pod("terminating", controlled("ReplicaSet", "rs1"), true),
		pod("of-a-statefulset", controlled("StatefulSet", "ss1"), false),
		pod("bare", nil, false),
	}
	want := []string{"of-a-deleted-deployment", "of-a-deleted-replicaset", "terminating (being deleted)"}
	if got := Orphans(deployments, sets, pods); !slices.Equal(got, want) {
		t.Errorf("Orphans = %v, want %v", got, want)
	}
}
