package etcd

import (
	"context"
	"maps"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/cluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// A node that stops reporting leaves its pods' Ready condition as it was:
// a member pod there is not counted ready, so that a member that does not
// answer there is down, not merely out of the operator's reach.
func TestEtcdMemberPodOnANodeNotReadyIsNotCountedReady(t *testing.T) {
	ctx := context.Background()
	k8s := startAPIServer(t)
	create := func(t *testing.T, o client.Object) {
		t.Helper()
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	// The API server is the test's own: the default namespace is free.
	ns := metav1.NamespaceDefault
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
	obs, _, _, err := (&etcdOps{client: k8s, api: k8s}).observeMembers(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for name, p := range obs.Pods {
		got[name] = p.Ready
	}
	want := map[string]bool{"example-0": true, "example-1": false, "example-2": true}
	if !maps.Equal(got, want) {
		t.Errorf("pods counted ready %v, want %v", got, want)
	}
}

// startAPIServer starts a kube-apiserver of its own for t (no controller
// runs beside it) and returns a client of it.
func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	c, err := cluster.Start(context.Background(), cluster.Options{Profile: cluster.APIOnly})
	if err != nil {
		t.Fatal("start the local cluster: ", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		if !t.Failed() {
			_ = c.RemoveDir()
		}
	})
	k8s, err := client.New(c.Config(), client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}
