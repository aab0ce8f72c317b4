package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/memcached"
	"github.com/app-operator/app-operator/test/testenv"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func memcachedChildren(ns, name string) (*appsv1.Deployment, *corev1.Service, *policyv1.PodDisruptionBudget) {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	return &appsv1.Deployment{ObjectMeta: meta}, &corev1.Service{ObjectMeta: meta}, &policyv1.PodDisruptionBudget{ObjectMeta: meta}
}

// createMemcachedPod plays the ReplicaSet controller, which the API-only
// cluster lacks: it creates a pod carrying the labels of the Memcached's
// pod template. finalizers keep a deleted pod around, terminating.
func createMemcachedPod(t *testing.T, ns, memcachedName, podName string, finalizers ...string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: podName, Finalizers: finalizers,
			Labels: resources.Labels(memcached.Selector(memcachedName)),
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "memcached", Image: cachev1alpha1.DefaultImage}},
		},
	}
	testenv.Create(t, k8s, p)
	return p
}

// ensureServiceAccount creates the default ServiceAccount that pods need:
// the API-only cluster runs no controller that would.
func ensureServiceAccount(t *testing.T, ns string) {
	t.Helper()
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
}

// waitForNodes waits until status.nodes of m is want.
func waitForNodes(t *testing.T, m *cachev1alpha1.Memcached, want ...string) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, m)
		return slices.Equal(m.Status.Nodes, want), fmt.Sprintf("status.nodes = %v, want %v", m.Status.Nodes, want)
	})
}

func TestMemcachedSampleCreatesOwnedChildren(t *testing.T) {
	ns, _ := startOperator(t)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	dep, svc, pdb := memcachedChildren(ns, "example-memcached")
	deleteAfterTest(t, m, svc)
	waitForObject(t, dep)
	waitForObject(t, svc)
	waitForObject(t, pdb)

	// The API server filled in the defaults of the optional fields.
	get(t, m)
	if m.Spec.Image != cachev1alpha1.DefaultImage || m.Spec.Resources == nil || m.Spec.Resources.Limits.Memory().String() != cachev1alpha1.DefaultMemory {
		t.Errorf("defaults not applied: image %q, resources %+v", m.Spec.Image, m.Spec.Resources)
	}
	for _, o := range []client.Object{dep, svc, pdb} {
		if !metav1.IsControlledBy(o, m) {
			t.Errorf("%T %s is not controlled by the Memcached: %v", o, o.GetName(), o.GetOwnerReferences())
		}
		if o.GetLabels()[resources.LabelManagedBy] != resources.ManagedBy || o.GetLabels()[resources.LabelInstance] != "example-memcached" {
			t.Errorf("%T labels = %v", o, o.GetLabels())
		}
	}
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want the sample's 3", *dep.Spec.Replicas)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != cachev1alpha1.DefaultImage || !slices.Equal(c.Args, []string{"-p", "11211", "-m", "96"}) || c.Ports[0].ContainerPort != 11211 {
		t.Errorf("container = image %s, args %v, ports %v", c.Image, c.Args, c.Ports)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Ports[0].Port != 11211 {
		t.Errorf("Service is not headless on 11211: clusterIP %q, ports %v", svc.Spec.ClusterIP, svc.Spec.Ports)
	}
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || !equalMaps(pdb.Spec.Selector.MatchLabels, dep.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget spec = %+v", pdb.Spec)
	}

	waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	markAvailable(t, ns, "example-memcached")
	ready := waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForCondition(t, m, conditions.Progressing, metav1.ConditionFalse, conditions.ReasonRolloutComplete)
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
	if ready.ObservedGeneration != m.Generation || m.Status.ObservedGeneration != m.Generation {
		t.Errorf("observedGeneration: condition %d, status %d, want %d", ready.ObservedGeneration, m.Status.ObservedGeneration, m.Generation)
	}
	if m.Status.Replicas != 3 || m.Status.ReadyReplicas != 3 {
		t.Errorf("replicas %d, readyReplicas %d, want 3 and 3", m.Status.Replicas, m.Status.ReadyReplicas)
	}
	if m.Status.Selector != "app.kubernetes.io/instance=example-memcached,app.kubernetes.io/name=memcached" {
		t.Errorf("status.selector = %q", m.Status.Selector)
	}
}

func TestMemcachedNodesFollowThePods(t *testing.T) {
	ns, _ := startOperator(t)
	ensureServiceAccount(t, ns)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	other := testenv.NewMemcached(t, ns)
	other.Name = "other-memcached"
	testenv.Create(t, k8s, other)
	deleteAfterTest(t, m, other)
	waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, "")

	// Pods appear in any order; the list is sorted.
	createMemcachedPod(t, ns, "example-memcached", "example-memcached-c")
	createMemcachedPod(t, ns, "example-memcached", "example-memcached-a")
	leaving := createMemcachedPod(t, ns, "example-memcached", "example-memcached-b", "example.com/hold")
	createMemcachedPod(t, ns, "other-memcached", "other-memcached-a")
	// A pod the operator did not label as its own is not in its
	// label-scoped cache, so never listed, even if it matches the selector.
	stray := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached-stray", Labels: memcached.Selector("example-memcached")},
		Spec:       corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	testenv.Create(t, k8s, stray)
	waitForNodes(t, m, "example-memcached-a", "example-memcached-b", "example-memcached-c")
	// Two Memcached resources in one namespace never list each other's pods.
	waitForNodes(t, other, "other-memcached-a")

	// A pod being deleted (held here by a finalizer, as a graceful
	// termination would hold it) is no longer a server.
	if err := k8s.Delete(context.Background(), leaving); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testenv.Update(t, k8s, leaving, func(p *corev1.Pod) { p.Finalizers = nil })
	})
	waitForNodes(t, m, "example-memcached-a", "example-memcached-c")

	// A pod that failed (evicted, say) is not one either.
	failed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached-c"}}
	get(t, failed)
	failed.Status.Phase = corev1.PodFailed
	if err := k8s.Status().Update(context.Background(), failed); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, m, "example-memcached-a")

	// A replacement joins the list.
	createMemcachedPod(t, ns, "example-memcached", "example-memcached-d")
	waitForNodes(t, m, "example-memcached-a", "example-memcached-d")

	// A deleted pod leaves it.
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached-a"}}); err != nil {
		t.Fatal(err)
	}
	waitForNodes(t, m, "example-memcached-d")
	waitForNodes(t, other, "other-memcached-a")
}

func TestMemcachedPodDisruptionBudgetFollowsSize(t *testing.T) {
	ns, _ := startOperator(t)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	dep, _, pdb := memcachedChildren(ns, "example-memcached")
	waitForObject(t, pdb)
	markAvailable(t, ns, "example-memcached")
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, "")

	// kubectl scale memcached/example-memcached --replicas=1
	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(context.Background(), m, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 || !strings.Contains(scale.Status.Selector, "app.kubernetes.io/instance=example-memcached") {
		t.Errorf("scale = %+v", scale)
	}
	scale.Spec.Replicas = 1
	if err := k8s.SubResource("scale").Update(context.Background(), m, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pdb), pdb)
		return *dep.Spec.Replicas == 1 && isNotFound(err), fmt.Sprintf("replicas %d, PodDisruptionBudget: %v", *dep.Spec.Replicas, err)
	})
	markAvailable(t, ns, "example-memcached")
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, "")

	testenv.Update(t, k8s, m, func(m *cachev1alpha1.Memcached) { m.Spec.Size = 2 })
	pdb = &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached"}}
	waitForObject(t, pdb)
	if !metav1.IsControlledBy(pdb, m) {
		t.Errorf("the recreated PodDisruptionBudget is not controlled by the Memcached")
	}
}

func TestMemcachedSpecChangesReachTheDeployment(t *testing.T) {
	ns, _ := startOperator(t)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	dep, _, _ := memcachedChildren(ns, "example-memcached")
	waitForObject(t, dep)

	testenv.Update(t, k8s, m, func(m *cachev1alpha1.Memcached) {
		m.Spec.Image = "memcached:1.6.44"
		m.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: mustQuantity("1Gi")}}
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		c := dep.Spec.Template.Spec.Containers[0]
		return c.Image == "memcached:1.6.44" && slices.Equal(c.Args, []string{"-p", "11211", "-m", "820"}) && c.Resources.Limits.Memory().String() == "1Gi",
			fmt.Sprintf("image %s, args %v, resources %v", c.Image, c.Args, c.Resources)
	})
}

func TestMemcachedRepairsDriftAndRecreatesChildren(t *testing.T) {
	ns, _ := startOperator(t)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	dep, svc, pdb := memcachedChildren(ns, "example-memcached")
	waitForObject(t, dep)
	waitForObject(t, svc)
	waitForObject(t, pdb)
	oldSvc, oldPDB := svc.UID, pdb.UID

	for _, o := range []client.Object{svc, pdb} {
		if err := k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](9)
		d.Spec.Template.Spec.Containers[0].Args = []string{"-m", "4096"}
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		s, p := &corev1.Service{}, &policyv1.PodDisruptionBudget{}
		key := client.ObjectKey{Namespace: ns, Name: "example-memcached"}
		if err := k8s.Get(context.Background(), key, s); err != nil || s.UID == oldSvc {
			return false, "Service not recreated"
		}
		if err := k8s.Get(context.Background(), key, p); err != nil || p.UID == oldPDB {
			return false, "PodDisruptionBudget not recreated"
		}
		get(t, dep)
		return *dep.Spec.Replicas == 3 && slices.Equal(dep.Spec.Template.Spec.Containers[0].Args, []string{"-p", "11211", "-m", "96"}),
			fmt.Sprintf("Deployment drift not repaired: replicas %d, args %v", *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Args)
	})
}

func TestMemcachedRefusesToAdoptForeignService(t *testing.T) {
	ns, op := startOperator(t)
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 11211}}, Selector: map[string]string{"app": "legacy-memcached"}},
	}
	testenv.Create(t, k8s, foreign)
	rv := foreign.ResourceVersion

	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	cond := waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonChildConflict)
	if !strings.Contains(cond.Message, "Service example-memcached") {
		t.Errorf("the condition does not name the Service: %q", cond.Message)
	}
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonChildConflict)
	get(t, foreign)
	if foreign.ResourceVersion != rv {
		t.Errorf("the foreign Service was changed: %+v", foreign.ObjectMeta)
	}
	dep, _, pdb := memcachedChildren(ns, "example-memcached")
	for _, o := range []client.Object{dep, pdb} {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); !isNotFound(err) {
			t.Errorf("%T created although the Service conflicts: %v", o, err)
		}
	}
	for _, mut := range op.Mutations.In(ns) {
		if strings.Contains(mut, "/services/") {
			t.Errorf("the operator wrote to a Service it does not own: %s", mut)
		}
	}
}

func TestMemcachedSteadyStateMakesNoWrites(t *testing.T) {
	ns, op := startOperator(t)
	ensureServiceAccount(t, ns)
	m := testenv.NewMemcached(t, ns)
	testenv.Create(t, k8s, m)
	markAvailable(t, ns, "example-memcached")
	for _, name := range []string{"example-memcached-x", "example-memcached-y", "example-memcached-z"} {
		createMemcachedPod(t, ns, "example-memcached", name)
	}
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForNodes(t, m, "example-memcached-x", "example-memcached-y", "example-memcached-z")

	// A change to a watched child wakes the controller: nothing to do.
	_, svc, _ := memcachedChildren(ns, "example-memcached")
	expectNoMutations(t, op, ns, "memcached", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/touched": "1"} })
	})
	// So does a pod event that could change the list: still nothing to do.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-memcached-y"}}
	expectNoMutations(t, op, ns, "memcached", func() {
		testenv.Update(t, k8s, pod, func(p *corev1.Pod) { p.Labels["example.com/team"] = "cache" })
	})

	// A pod's status changing without changing the list does not even wake
	// the controller.
	time.Sleep(time.Second)
	before := reconcileCount(t, "memcached")
	get(t, pod)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if after := reconcileCount(t, "memcached"); after != before {
		t.Errorf("a pod status update that leaves status.nodes as it is caused %v passes", after-before)
	}

	// A restart passes over every resource again: nothing to do either.
	op.Stop()
	before = reconcileCount(t, "memcached")
	op2 := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "memcached") > before, "no pass after the restart"
	})
	time.Sleep(time.Second)
	if muts := op2.Mutations.In(ns); len(muts) != 0 {
		t.Fatalf("after a restart the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}

func TestMemcachedReportsResourcesTheClusterRejects(t *testing.T) {
	ns, _ := startOperator(t)
	m := testenv.NewMemcached(t, ns)
	// The schema refuses a cpu, memory or ephemeral-storage request above
	// its limit; only the Deployment knows that an extended resource's
	// request must equal its limit.
	m.Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"example.com/widget": mustQuantity("2")},
		Limits:   corev1.ResourceList{"example.com/widget": mustQuantity("1")},
	}
	testenv.Create(t, k8s, m)
	cond := waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonApplyRejected)
	if !strings.Contains(cond.Message, "resources.requests") || !strings.Contains(cond.Message, "example.com/widget limit") {
		t.Errorf("the condition does not carry the server's message: %q", cond.Message)
	}
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonApplyRejected)

	testenv.Update(t, k8s, m, func(m *cachev1alpha1.Memcached) { m.Spec.Resources.Requests = nil })
	dep, _, _ := memcachedChildren(ns, "example-memcached")
	waitForObject(t, dep)
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
}
