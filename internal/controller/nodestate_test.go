package controller_test

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// A node that stops reporting leaves its pods' Ready condition as it was:
// a member pod there is not counted ready, so that a member that does not
// answer there is down, not merely out of the operator's reach.
func TestEtcdMemberPodOnANodeNotReadyIsNotCountedReady(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	// No controller makes the namespace's ServiceAccount here.
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	nodeReady := map[string]corev1.ConditionStatus{ns + "-up": corev1.ConditionTrue, ns + "-lost": corev1.ConditionUnknown}
	for name, ready := range nodeReady {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		create(t, node)
		t.Cleanup(func() { _ = k8s.Delete(ctx, node) })
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		if err := k8s.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example"}}
	for pod, node := range map[string]string{"example-0": ns + "-up", "example-1": ns + "-lost", "example-2": ""} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod, Labels: resources.Labels(etcdcluster.Selector("example"))},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: etcdcluster.ContainerName, Image: "etcd"}}},
		}
		create(t, p)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: etcdcluster.ContainerName, Image: "etcd", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if err := k8s.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := controller.EtcdPodsReady(ctx, k8s, e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"example-0": true, "example-1": false, "example-2": true}
	if !maps.Equal(got, want) {
		t.Errorf("pods counted ready %v, want %v", got, want)
	}
}
