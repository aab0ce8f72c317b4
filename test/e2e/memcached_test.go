package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/memcached"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The seed's Memcached sample becomes Ready with 3 Running pods, and
// status.nodes names exactly the pods that exist as it scales up, scales
// down and loses a pod: the bug the seed shows (5 names left after scaling
// 5 -> 3) does not happen.
func TestMemcachedNodesFollowScaleAndPodReplacement(t *testing.T) {
	ctx := context.Background()
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	op := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})

	m := &cachev1alpha1.Memcached{}
	testenv.LoadSample(t, "cache_v1alpha1_memcached.yaml", m, ns)
	if err := c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	// A second Memcached in the same namespace: the two never share pods.
	other := &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-memcached"}, Spec: cachev1alpha1.MemcachedSpec{Size: 2}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	waitReady(t, c, m, 2*time.Minute)
	initial := waitNodesAreThePods(t, c, m, 3)
	t.Logf("size 3: status.nodes %v", initial)
	for _, p := range runningPods(t, c, m) {
		if p.Spec.NodeName != cluster.FakeNodeName {
			t.Errorf("pod %s on node %q, want %q", p.Name, p.Spec.NodeName, cluster.FakeNodeName)
		}
	}
	if len(runningPods(t, c, m)) != 3 {
		t.Fatalf("want 3 Running pods listed in status.nodes %v", initial)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, &policyv1.PodDisruptionBudget{}); err != nil {
		t.Errorf("no PodDisruptionBudget for 3 pods: %v", err)
	}

	// kubectl scale memcached/example-memcached --replicas=5
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, m, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if err := c.SubResource("scale").Update(ctx, m, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, m, 2*time.Minute)
	five := waitNodesAreThePods(t, c, m, 5)
	t.Logf("size 5: status.nodes %v", five)
	for _, name := range initial {
		if !slices.Contains(five, name) {
			t.Errorf("scaling up replaced pod %s: nodes %v", name, five)
		}
	}

	// Back to 3: exactly the 3 remaining pods, none of the 2 removed.
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Size = 3
	if err := c.Patch(ctx, m, patch); err != nil {
		t.Fatal(err)
	}
	waitReady(t, c, m, 2*time.Minute)
	three := waitNodesAreThePods(t, c, m, 3)
	t.Logf("size 3 again: status.nodes %v", three)
	for _, name := range three {
		if !slices.Contains(five, name) {
			t.Errorf("scaling down listed pod %s, which was not one of the 5 %v", name, five)
		}
	}

	// A deleted pod is replaced, and the list follows.
	victim := three[0]
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}}); err != nil {
		t.Fatal(err)
	}
	var replaced []string
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		replaced = waitNodesAreThePods(t, c, m, 3)
		return !slices.Contains(replaced, victim), fmt.Sprintf("deleted pod %s still listed: %v", victim, replaced)
	})
	t.Logf("pod %s deleted: status.nodes %v", victim, replaced)
	waitReady(t, c, m, 2*time.Minute)
	if got := waitNodesAreThePods(t, c, m, 3); len(runningPods(t, c, m)) != 3 {
		t.Errorf("want 3 Running pods after the replacement, nodes %v", got)
	}

	otherNodes := waitNodesAreThePods(t, c, other, 2)
	t.Logf("other-memcached: status.nodes %v", otherNodes)
	for _, name := range otherNodes {
		if slices.Contains(m.Status.Nodes, name) {
			t.Errorf("pod %s is listed by both Memcached resources", name)
		}
	}

	// Converged, with real pods whose status the node keeps updating: the
	// operator writes nothing. (Settled first: the replaced pod's
	// availability may still be reaching the status.)
	testenv.WaitRolledOut(t, c, ns, 2*time.Minute)
	op.Mutations.WaitQuiet(t, ns, 2*time.Second, time.Minute)
	op.Mutations.Reset()
	time.Sleep(3 * time.Second)
	if muts := op.Mutations.In(ns); len(muts) != 0 {
		t.Errorf("at steady state the operator made %d mutating requests, want 0: %v", len(muts), muts)
	}

	// Deleting the Memcached deletes its children through the garbage collector.
	if err := c.Delete(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, child := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}},
	} {
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(child), child)
			return apierrors.IsNotFound(err), fmt.Sprintf("%T still there: %v", child, err)
		})
	}
}

// waitNodesAreThePods waits until status.nodes of m has n names and is the
// sorted list of the pods that currently exist for it (not terminating, not
// finished), and returns it.
func waitNodesAreThePods(t *testing.T, c client.Client, m *cachev1alpha1.Memcached, n int) []string {
	t.Helper()
	var nodes []string
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		want := podNames(t, c, m)
		nodes = m.Status.Nodes
		return len(nodes) == n && slices.Equal(nodes, want), fmt.Sprintf("status.nodes %v, pods %v, want %d", nodes, want, n)
	})
	return nodes
}

// podNames lists, from the API server, the pods of m that are neither
// terminating nor finished, sorted.
func podNames(t *testing.T, c client.Client, m *cachev1alpha1.Memcached) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(m.Namespace), client.MatchingLabels(memcached.Selector(m.Name))); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names
}

// runningPods returns the pods listed in m's status.nodes that are Running.
func runningPods(t *testing.T, c client.Client, m *cachev1alpha1.Memcached) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, name := range m.Status.Nodes {
		p := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: name}, p); err != nil {
			t.Fatalf("pod %s in status.nodes: %v", name, err)
		}
		if p.Status.Phase == corev1.PodRunning {
			out = append(out, *p)
		}
	}
	return out
}
