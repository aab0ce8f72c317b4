package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	msdManager         = engine.FieldOwner("microservicedeploy")
	msdHandoverManager = engine.FieldOwner("microservicedeploy") + "-handover"
)

// startMSDOperator creates a namespace and runs the operator with opts,
// watching only that namespace.
func startMSDOperator(t *testing.T, opts microservicedeploy.Options) (string, *testenv.Operator) {
	t.Helper()
	ns := testenv.NewNamespace(t, k8s)
	return ns, testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{MicroServiceDeploy: opts}})
}

// newMSD is the seed sample, unchanged, in namespace ns, optionally renamed
// (name and fullName) and changed.
func newMSD(t *testing.T, ns, name string, mutate func(*customv1.MicroServiceDeploy)) *customv1.MicroServiceDeploy {
	t.Helper()
	m := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, testenv.MSDSample, m, ns)
	if name != "" {
		m.Name, m.Spec.FullName = name, name
	}
	if mutate != nil {
		mutate(m)
	}
	return m
}

// msdChildren are the children every instance has, named name.
func msdChildren(ns, name string) []client.Object {
	objectMeta := func() metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: objectMeta()},
		&corev1.ConfigMap{ObjectMeta: objectMeta()},
		&corev1.Service{ObjectMeta: objectMeta()},
		&appsv1.Deployment{ObjectMeta: objectMeta()},
	}
}

func msdHPA(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func msdDeployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func msdQuota(ns string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: microservicedeploy.QuotaName}}
}

// msdWaitGone waits until obj no longer exists.
func msdWaitGone(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return isNotFound(err), fmt.Sprintf("%T %s still there (%v)", obj, obj.GetName(), err)
	})
}

// msdRecordReplicas watches the Deployment ns/name from its current version
// and returns a function that stops watching and returns every value of
// spec.replicas it saw, so that a transient value cannot go unnoticed.
func msdRecordReplicas(t *testing.T, ns, name string) func() []int32 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	d := msdDeployment(ns, name)
	get(t, d)
	w, err := cs.AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: d.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []int32
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if dep, ok := ev.Object.(*appsv1.Deployment); ok {
				mu.Lock()
				seen = append(seen, ptr.Deref(dep.Spec.Replicas, -1))
				mu.Unlock()
			}
		}
	}()
	stop := func() []int32 {
		// Let the last events arrive.
		time.Sleep(500 * time.Millisecond)
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return append([]int32(nil), seen...)
	}
	t.Cleanup(func() { w.Stop() })
	return stop
}

func TestMicroServiceDeploySampleCreatesItsChildrenAndBecomesReady(t *testing.T) {
	ns, _ := startMSDOperator(t, microservicedeploy.Options{})
	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	name := "ms-sample-v1s0"

	for _, o := range append(msdChildren(ns, name), msdHPA(ns, name)) {
		waitForObject(t, o)
		if !metav1.IsControlledBy(o, m) {
			t.Errorf("%T %s is not controlled by the MicroServiceDeploy: %v", o, o.GetName(), o.GetOwnerReferences())
		}
		l := o.GetLabels()
		if l["app.kubernetes.io/managed-by"] != "app-operator" || l["app.kubernetes.io/part-of"] != "ms-sample" || l["app.kubernetes.io/version"] != "1.0" {
			t.Errorf("%T labels = %v", o, l)
		}
	}
	dep := msdDeployment(ns, name)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return ptr.Deref(dep.Spec.Replicas, 0) == 3, fmt.Sprintf("replicas = %d, want 3", ptr.Deref(dep.Spec.Replicas, -1))
	})
	pod := dep.Spec.Template
	c := pod.Spec.Containers[0]
	if pod.Spec.ServiceAccountName != name || c.Image != "just a image url" || c.Resources.Requests.Cpu().String() != "2" ||
		pod.Labels["app.kubernetes.io/version"] != "1.0" {
		t.Errorf("pod template = %+v", pod)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	get(t, cm)
	if cm.Data["config"] != "password=88888888" {
		t.Errorf("ConfigMap data = %v", cm.Data)
	}
	hpa := msdHPA(ns, name)
	get(t, hpa)
	if *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 6 || hpa.Spec.ScaleTargetRef.Name != name {
		t.Errorf("HPA spec = %+v", hpa.Spec)
	}
	quota := msdQuota(ns)
	waitForObject(t, quota)
	if len(quota.OwnerReferences) != 0 {
		t.Errorf("quota owners = %v, want none", quota.OwnerReferences)
	}
	// 6 pods at most, 2 of surge, 6 terminating: 2 cpu and 4Gi each.
	if got := quota.Spec.Hard; got.Name("requests.cpu", resource.DecimalSI).String() != "28" || got.Name("limits.memory", resource.BinarySI).String() != "56Gi" {
		t.Errorf("quota hard = %v", got)
	}
	if sel := quota.Spec.ScopeSelector; sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Values[0] != microservicedeploy.PriorityClassName {
		t.Errorf("quota scope selector = %+v, want the instances' PriorityClass", sel)
	}
	waitForObject(t, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: microservicedeploy.PriorityClassName}})
	// No Ingress: the operator has no base domain.
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ing), ing); !isNotFound(err) {
		t.Errorf("an Ingress exists without a base domain: %v", err)
	}

	waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	markAvailable(t, ns, name)
	ready := waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionTrue, conditions.ReasonQuotaApplied)
	waitForCondition(t, m, conditions.Idle, metav1.ConditionFalse, conditions.ReasonActive)
	waitForCondition(t, m, conditions.Exposed, metav1.ConditionFalse, conditions.ReasonNoBaseDomain)
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
	if ready.ObservedGeneration != m.Generation || m.Status.ObservedGeneration != m.Generation {
		t.Errorf("observedGeneration: condition %d, status %d, want %d", ready.ObservedGeneration, m.Status.ObservedGeneration, m.Generation)
	}
	if m.Status.ReadyReplicas != 3 || m.Status.Replicas != 3 || m.Status.URL != "" {
		t.Errorf("status = %+v", m.Status)
	}
}

func TestMicroServiceDeployHandsReplicasToTheHPAAndBack(t *testing.T) {
	ns, op := startMSDOperator(t, microservicedeploy.Options{})
	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	name := m.Name
	dep := msdDeployment(ns, name)
	waitForObject(t, msdHPA(ns, name))
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return ptr.Deref(dep.Spec.Replicas, 0) == 3, fmt.Sprintf("replicas = %d", ptr.Deref(dep.Spec.Replicas, -1))
	})
	// Created with autoscaling: the operator's manager never set replicas.
	if got := testenv.ReplicasOwners(t, dep); strings.Join(got, ",") != msdHandoverManager {
		t.Errorf("spec.replicas owned by %v, want only %s", got, msdHandoverManager)
	}

	// The HPA scales the Deployment through its scale subresource: the
	// operator leaves the new value alone.
	scaleTo := func(n int32) {
		t.Helper()
		scale := &autoscalingv1.Scale{}
		if err := k8s.SubResource("scale").Get(context.Background(), dep, scale); err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = n
		if err := k8s.SubResource("scale").Update(context.Background(), dep, client.WithSubResourceBody(scale), client.FieldOwner("hpa-test")); err != nil {
			t.Fatal(err)
		}
	}
	markAvailable(t, ns, name)
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, "")
	op.Mutations.Reset()
	passes := reconcileCount(t, "microservicedeploy")
	scaleTo(5)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "microservicedeploy") > passes, "no pass after the scale"
	})
	time.Sleep(time.Second)
	for _, mut := range op.Mutations.In(ns) {
		if strings.Contains(mut, "/deployments/") {
			t.Errorf("the operator wrote to the Deployment the HPA scaled: %s", mut)
		}
	}
	get(t, dep)
	if *dep.Spec.Replicas != 5 {
		t.Errorf("replicas = %d after the HPA scaled to 5", *dep.Spec.Replicas)
	}
	if got := testenv.ReplicasOwners(t, dep); strings.Join(got, ",") != "hpa-test" {
		t.Errorf("spec.replicas owned by %v, want only the HPA's manager", got)
	}

	// Autoscaling off: the HPA goes, the operator owns replicas again.
	testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Autoscaling = false })
	msdWaitGone(t, msdHPA(ns, name))
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		got := testenv.ReplicasOwners(t, dep)
		return *dep.Spec.Replicas == 3 && strings.Join(got, ",") == msdManager, fmt.Sprintf("replicas %d owned by %v", *dep.Spec.Replicas, got)
	})

	// Autoscaling on again: the operator lets go of replicas without the
	// count ever falling back to the default of 1.
	stop := msdRecordReplicas(t, ns, name)
	testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Autoscaling = true })
	waitForObject(t, msdHPA(ns, name))
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		got := testenv.ReplicasOwners(t, dep)
		return !msdHas(got, msdManager), fmt.Sprintf("spec.replicas owned by %v", got)
	})
	if seen := stop(); len(seen) == 0 || msdHasInt(seen, 1) || msdHasInt(seen, -1) {
		t.Errorf("replicas went through %v during the handover, want 3 throughout", seen)
	}
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas = %d after the handover, want 3", *dep.Spec.Replicas)
	}
}

func msdHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func msdHasInt(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestMicroServiceDeployIdleParksAndRestores(t *testing.T) {
	ns, _ := startMSDOperator(t, microservicedeploy.Options{})
	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	name := m.Name
	markAvailable(t, ns, name)
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, "")
	before := map[string]string{}
	for _, o := range msdChildren(ns, name)[:3] {
		get(t, o)
		before[fmt.Sprintf("%T", o)] = string(o.GetUID())
	}

	testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Idle = true })
	msdWaitGone(t, msdHPA(ns, name))
	dep := msdDeployment(ns, name)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return *dep.Spec.Replicas == 0, fmt.Sprintf("replicas = %d", *dep.Spec.Replicas)
	})
	markAvailable(t, ns, name)
	waitForCondition(t, m, conditions.Idle, metav1.ConditionTrue, conditions.ReasonParked)
	waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	for _, o := range msdChildren(ns, name)[:3] {
		get(t, o)
		if string(o.GetUID()) != before[fmt.Sprintf("%T", o)] {
			t.Errorf("%T was replaced or removed while idle", o)
		}
	}
	// An idle instance needs no room in the quota.
	quota := msdQuota(ns)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, quota)
		cpu := quota.Spec.Hard[corev1.ResourceName("requests.cpu")]
		return cpu.IsZero(), fmt.Sprintf("quota requests.cpu = %s", cpu.String())
	})

	// Idle off restores the shape, replicas straight back to 3.
	stop := msdRecordReplicas(t, ns, name)
	testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Idle = false })
	waitForObject(t, msdHPA(ns, name))
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return *dep.Spec.Replicas == 3 && !msdHas(testenv.ReplicasOwners(t, dep), msdManager),
			fmt.Sprintf("replicas %d owned by %v", *dep.Spec.Replicas, testenv.ReplicasOwners(t, dep))
	})
	if seen := stop(); msdHasInt(seen, 1) {
		t.Errorf("replicas went through %v when idle turned off, want 0 then 3", seen)
	}
	waitForCondition(t, m, conditions.Idle, metav1.ConditionFalse, conditions.ReasonActive)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, quota)
		cpu := quota.Spec.Hard[corev1.ResourceName("requests.cpu")]
		return cpu.String() == "28", fmt.Sprintf("quota requests.cpu = %s", cpu.String())
	})
}

func TestMicroServiceDeployConfigChangeRollsThePods(t *testing.T) {
	ns, _ := startMSDOperator(t, microservicedeploy.Options{})
	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	dep := msdDeployment(ns, m.Name)
	waitForObject(t, dep)
	oldHash := dep.Spec.Template.Annotations[microservicedeploy.ConfigHashAnnotation]

	testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Config = "password=99999999" })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, cm)
		get(t, dep)
		h := dep.Spec.Template.Annotations[microservicedeploy.ConfigHashAnnotation]
		return cm.Data["config"] == "password=99999999" && h != oldHash && h != "", fmt.Sprintf("config %q, hash %s", cm.Data["config"], h)
	})
}

func TestMicroServiceDeployExposure(t *testing.T) {
	t.Run("should expose through an Ingress behind the auth endpoint", func(t *testing.T) {
		opts := microservicedeploy.Options{BaseDomain: "apps.example.com", IngressClassName: "nginx", AuthURL: "https://auth.example.com/check"}
		ns, _ := startMSDOperator(t, opts)
		m := newMSD(t, ns, "", nil)
		testenv.Create(t, k8s, m)
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}}
		waitForObject(t, ing)
		if ing.Spec.Rules[0].Host != "ms-sample-v1.apps.example.com" || ptr.Deref(ing.Spec.IngressClassName, "") != "nginx" ||
			ing.Annotations[microservicedeploy.DefaultAuthURLAnnotation] != opts.AuthURL || !metav1.IsControlledBy(ing, m) {
			t.Errorf("Ingress = %+v", ing)
		}
		waitForCondition(t, m, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
		if m.Status.URL != "http://ms-sample-v1.apps.example.com/" {
			t.Errorf("status.url = %q", m.Status.URL)
		}
		// Ready does not wait for an Ingress address, which needs an Ingress controller.
		markAvailable(t, ns, m.Name)
		waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)

		// Without needAuth the Ingress no longer asks for authentication.
		testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.NeedAuth = false })
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			get(t, ing)
			_, ok := ing.Annotations[microservicedeploy.DefaultAuthURLAnnotation]
			return !ok, fmt.Sprintf("annotations %v", ing.Annotations)
		})
	})

	t.Run("should not expose an instance needing auth without an auth endpoint", func(t *testing.T) {
		ns, _ := startMSDOperator(t, microservicedeploy.Options{BaseDomain: "apps.example.com"})
		m := newMSD(t, ns, "", func(m *customv1.MicroServiceDeploy) { m.Spec.NeedAuth = false })
		testenv.Create(t, k8s, m)
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}}
		waitForObject(t, ing)
		waitForCondition(t, m, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
		if ing.Annotations[microservicedeploy.DefaultAuthURLAnnotation] != "" {
			t.Errorf("annotations = %v", ing.Annotations)
		}

		// needAuth on, and no endpoint to enforce it: the Ingress goes.
		testenv.Update(t, k8s, m, func(m *customv1.MicroServiceDeploy) { m.Spec.NeedAuth = true })
		msdWaitGone(t, ing)
		cond := waitForCondition(t, m, conditions.Exposed, metav1.ConditionFalse, conditions.ReasonAuthUnavailable)
		if !strings.Contains(cond.Message, "needAuth") || m.Status.URL != "" {
			t.Errorf("Exposed message %q, url %q", cond.Message, m.Status.URL)
		}
		markAvailable(t, ns, m.Name)
		waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	})
}

// msdIngress is the Ingress of the instance ns/name.
func msdIngress(ns, name string) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// msdNoAuth lets an instance be exposed without an auth endpoint.
func msdNoAuth(m *customv1.MicroServiceDeploy) { m.Spec.NeedAuth = false }

// msdAfterCreationSecond waits until the second m was created in has
// passed: the API server stamps creation times to the second, and an
// instance created next is then strictly younger.
func msdAfterCreationSecond(m *customv1.MicroServiceDeploy) {
	time.Sleep(time.Until(m.CreationTimestamp.Add(time.Second + 50*time.Millisecond)))
}

// msdExpectHostLost checks that m is not exposed because holder
// (namespace/name) holds host, and that the rest of it runs.
func msdExpectHostLost(t *testing.T, m *customv1.MicroServiceDeploy, host, holder string) {
	t.Helper()
	cond := waitForCondition(t, m, conditions.Exposed, metav1.ConditionFalse, conditions.ReasonHostConflict)
	if !strings.Contains(cond.Message, host) || !strings.Contains(cond.Message, holder) {
		t.Errorf("Exposed message %q does not name the host %s and its holder %s", cond.Message, host, holder)
	}
	if m.Status.URL != "" {
		t.Errorf("status.url = %q, want none", m.Status.URL)
	}
	waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonHostConflict)
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonHostConflict)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(msdIngress(m.Namespace, m.Name)), msdIngress(m.Namespace, m.Name)); !isNotFound(err) {
		t.Errorf("the Ingress of %s/%s exists (%v), want none", m.Namespace, m.Name, err)
	}
	for _, o := range msdChildren(m.Namespace, m.Name) {
		waitForObject(t, o)
	}
}

// msdWaitForHost waits, at most within, until the Ingress of ns/name
// serves host, and returns how long that took.
func msdWaitForHost(t *testing.T, ns, name, host string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ing := msdIngress(ns, name)
	testenv.Eventually(t, within, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ing), ing); err != nil {
			return false, err.Error()
		}
		got := ""
		if len(ing.Spec.Rules) > 0 {
			got = ing.Spec.Rules[0].Host
		}
		return got == host, fmt.Sprintf("Ingress %s/%s host %q, want %q", ns, name, got, host)
	})
	return time.Since(start)
}

func TestMicroServiceDeployHostIsHeldByTheOldestInstanceAcrossNamespaces(t *testing.T) {
	const host = "ms-sample-v1.apps.example.com"
	opts := microservicedeploy.Options{BaseDomain: "apps.example.com"}
	nsOld, nsNew := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	op := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{nsOld, nsNew}, Options: controller.Options{MicroServiceDeploy: opts}})

	// The same sample, in two namespaces: both want the same host.
	older := newMSD(t, nsOld, "", msdNoAuth)
	testenv.Create(t, k8s, older)
	msdWaitForHost(t, nsOld, older.Name, host, 20*time.Second)
	waitForCondition(t, older, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
	msdAfterCreationSecond(older)
	younger := newMSD(t, nsNew, "", msdNoAuth)
	testenv.Create(t, k8s, younger)
	msdExpectHostLost(t, younger, host, nsOld+"/"+older.Name)
	get(t, older)
	if c := meta.FindStatusCondition(older.Status.Conditions, conditions.Exposed); c == nil || c.Status != metav1.ConditionTrue || older.Status.URL != "http://"+host+"/" {
		t.Errorf("the older instance: Exposed %v, url %q", c, older.Status.URL)
	}

	// The instance that lost its host settles: a pass over it writes nothing.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: nsNew, Name: younger.Name}}
	expectNoMutations(t, op, nsNew, "microservicedeploy", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/touched": time.Now().String()} })
	})

	// The holder goes: the younger instance takes the host at once.
	if err := k8s.Delete(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	took := msdWaitForHost(t, nsNew, younger.Name, host, 5*time.Second)
	t.Logf("The younger instance held the host %v after the older one was deleted", took)
	waitForCondition(t, younger, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
	if younger.Status.URL != "http://"+host+"/" {
		t.Errorf("status.url = %q", younger.Status.URL)
	}
	markAvailable(t, nsNew, younger.Name)
	waitForCondition(t, younger, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForCondition(t, younger, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
}

// msName "ms-sample" with path "v1" and msName "ms" with path "sample-v1"
// join to the same host: the instance that wants it second does not get it.
func TestMicroServiceDeployHostsThatJoinToTheSameNameAreOneHost(t *testing.T) {
	ns, _ := startMSDOperator(t, microservicedeploy.Options{BaseDomain: "apps.example.com"})
	first := newMSD(t, ns, "ms-sample-v1s0", msdNoAuth)
	testenv.Create(t, k8s, first)
	msdWaitForHost(t, ns, first.Name, "ms-sample-v1.apps.example.com", 20*time.Second)
	msdAfterCreationSecond(first)
	second := newMSD(t, ns, "ms-v1s0", func(m *customv1.MicroServiceDeploy) {
		msdNoAuth(m)
		m.Spec.MsName, m.Spec.Path = "ms", "sample-v2"
	})
	testenv.Create(t, k8s, second)
	msdWaitForHost(t, ns, second.Name, "ms-sample-v2.apps.example.com", 20*time.Second)
	waitForCondition(t, second, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)

	// Now the second wants ms-sample-v1 too: it gives up its Ingress.
	testenv.Update(t, k8s, second, func(m *customv1.MicroServiceDeploy) { m.Spec.Path = "sample-v1" })
	msdWaitGone(t, msdIngress(ns, second.Name))
	msdExpectHostLost(t, second, "ms-sample-v1.apps.example.com", ns+"/"+first.Name)

	// The first moves to another path: the host is free, and the second
	// takes it at once.
	testenv.Update(t, k8s, first, func(m *customv1.MicroServiceDeploy) { m.Spec.Path = "v3" })
	took := msdWaitForHost(t, ns, second.Name, "ms-sample-v1.apps.example.com", 5*time.Second)
	t.Logf("The second instance held the host %v after the first one changed its path", took)
	msdWaitForHost(t, ns, first.Name, "ms-sample-v3.apps.example.com", 5*time.Second)
	waitForCondition(t, second, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
}

func TestMicroServiceDeployInstancesShareOneQuota(t *testing.T) {
	ns, _ := startMSDOperator(t, microservicedeploy.Options{})
	a := newMSD(t, ns, "ms-sample-v1s0", nil)
	b := newMSD(t, ns, "ms-sample-v1s1", func(m *customv1.MicroServiceDeploy) {
		m.Spec.Autoscaling = false
		m.Spec.Replicas = ptr.To[int32](1)
	})
	testenv.Create(t, k8s, a)
	testenv.Create(t, k8s, b)
	quota := msdQuota(ns)
	// a: 6 pods at most + 2 of surge + 6 terminating; b: 1 + 1 + 1. 2 cpu
	// and 4Gi each.
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(quota), quota); err != nil {
			return false, err.Error()
		}
		h := quota.Spec.Hard
		return msdQty(h, "requests.cpu") == "34" && msdQty(h, "limits.cpu") == "34" &&
				msdQty(h, "requests.memory") == "68Gi" && msdQty(h, "limits.memory") == "68Gi",
			fmt.Sprintf("hard %v", h)
	})
	quotaUID := quota.UID
	for _, m := range []*customv1.MicroServiceDeploy{a, b} {
		waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionTrue, conditions.ReasonQuotaApplied)
	}

	// One goes: the same quota shrinks to the other.
	if err := k8s.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, quota)
		return msdQty(quota.Spec.Hard, "requests.cpu") == "6", fmt.Sprintf("hard %v", quota.Spec.Hard)
	})
	if quota.UID != quotaUID {
		t.Error("the quota was replaced instead of updated")
	}

	// The last one goes: so does the quota.
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	msdWaitGone(t, quota)
}

// managersOf returns the field managers of o.
func managersOf(o client.Object) []string {
	out := make([]string, 0, len(o.GetManagedFields()))
	for _, mf := range o.GetManagedFields() {
		out = append(out, mf.Manager)
	}
	return out
}

func msdQty(l corev1.ResourceList, name string) string {
	q, ok := l[corev1.ResourceName(name)]
	if !ok {
		return "<none>"
	}
	return q.String()
}

func TestMicroServiceDeployLeavesAForeignQuotaAlone(t *testing.T) {
	ns, op := startMSDOperator(t, microservicedeploy.Options{})
	// It even carries the operator's labels: a quota is the operator's only
	// when its field manager applied it.
	foreign := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: microservicedeploy.QuotaName, Labels: map[string]string{
			"team": "platform", "app.kubernetes.io/managed-by": "app-operator", "app.kubernetes.io/name": "microservicedeploy"}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}},
	}
	testenv.Create(t, k8s, foreign)
	rv := foreign.ResourceVersion

	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	cond := waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionFalse, conditions.ReasonQuotaConflict)
	if !strings.Contains(cond.Message, microservicedeploy.QuotaName) {
		t.Errorf("the condition does not name the quota: %q", cond.Message)
	}
	waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonQuotaConflict)
	waitForCondition(t, m, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonQuotaConflict)
	get(t, foreign)
	if foreign.ResourceVersion != rv {
		t.Errorf("the foreign quota was changed: %+v", foreign)
	}
	for _, mut := range op.Mutations.In(ns) {
		if strings.Contains(mut, "/resourcequotas/") {
			t.Errorf("the operator wrote to a quota it did not create: %s", mut)
		}
	}

	// Once it is gone, the operator puts its own in place.
	if err := k8s.Delete(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionTrue, conditions.ReasonQuotaApplied)
	quota := msdQuota(ns)
	get(t, quota)
	if owners := managersOf(quota); !msdHas(owners, engine.FieldOwner("microservicedeploy-quota")) {
		t.Errorf("quota applied by %v, want the operator's quota controller", owners)
	}
}

func TestMicroServiceDeployRepairsDriftAndRefusesToAdopt(t *testing.T) {
	t.Run("should recreate deleted children and set changed fields back", func(t *testing.T) {
		ns, _ := startMSDOperator(t, microservicedeploy.Options{})
		m := newMSD(t, ns, "", nil)
		testenv.Create(t, k8s, m)
		name := m.Name
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		hpa := msdHPA(ns, name)
		quota := msdQuota(ns)
		waitForObject(t, cm)
		waitForObject(t, hpa)
		waitForObject(t, quota)
		old := map[string]string{"cm": string(cm.UID), "hpa": string(hpa.UID), "quota": string(quota.UID)}
		for _, o := range []client.Object{cm, hpa, quota} {
			if err := k8s.Delete(context.Background(), o); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			c, h, q := &corev1.ConfigMap{}, &autoscalingv2.HorizontalPodAutoscaler{}, &corev1.ResourceQuota{}
			for _, pair := range []struct {
				o   client.Object
				src client.Object
			}{{c, cm}, {h, hpa}, {q, quota}} {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pair.src), pair.o); err != nil {
					return false, err.Error()
				}
			}
			return string(c.UID) != old["cm"] && string(h.UID) != old["hpa"] && string(q.UID) != old["quota"], "not recreated yet"
		})

		dep := msdDeployment(ns, name)
		testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox" })
		testenv.Update(t, k8s, cm, func(c *corev1.ConfigMap) { c.Data["config"] = "password=stolen" })
		testenv.Update(t, k8s, quota, func(q *corev1.ResourceQuota) {
			q.Spec.Hard[corev1.ResourceName("requests.cpu")] = resource.MustParse("1")
		})
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			get(t, dep)
			get(t, cm)
			get(t, quota)
			return dep.Spec.Template.Spec.Containers[0].Image == "just a image url" && cm.Data["config"] == "password=88888888" &&
					msdQty(quota.Spec.Hard, "requests.cpu") == "28",
				fmt.Sprintf("image %s, config %s, quota cpu %s", dep.Spec.Template.Spec.Containers[0].Image, cm.Data["config"], msdQty(quota.Spec.Hard, "requests.cpu"))
		})
	})

	t.Run("should leave a ConfigMap it does not control alone", func(t *testing.T) {
		ns, op := startMSDOperator(t, microservicedeploy.Options{})
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ms-sample-v1s0"}, Data: map[string]string{"a": "b"}}
		testenv.Create(t, k8s, foreign)
		rv := foreign.ResourceVersion
		m := newMSD(t, ns, "", nil)
		testenv.Create(t, k8s, m)
		cond := waitForCondition(t, m, conditions.Ready, metav1.ConditionFalse, conditions.ReasonChildConflict)
		if !strings.Contains(cond.Message, "ConfigMap ms-sample-v1s0") {
			t.Errorf("the condition does not name the ConfigMap: %q", cond.Message)
		}
		get(t, foreign)
		if foreign.ResourceVersion != rv {
			t.Error("the foreign ConfigMap was changed")
		}
		for _, mut := range op.Mutations.In(ns) {
			if strings.Contains(mut, "/deployments/") || strings.Contains(mut, "/configmaps/") {
				t.Errorf("the operator wrote a child although one conflicts: %s", mut)
			}
		}
	})
}

func TestMicroServiceDeploySteadyStateMakesNoWrites(t *testing.T) {
	opts := microservicedeploy.Options{BaseDomain: "apps.example.com", AuthURL: "https://auth.example.com/check"}
	ns, op := startMSDOperator(t, opts)
	a := newMSD(t, ns, "ms-sample-v1s0", nil)
	// b has a host of its own: with a's host it would not be exposed.
	b := newMSD(t, ns, "ms-sample-v1s1", func(m *customv1.MicroServiceDeploy) { m.Spec.Idle, m.Spec.Path = true, "v2" })
	testenv.Create(t, k8s, a)
	testenv.Create(t, k8s, b)
	for _, m := range []*customv1.MicroServiceDeploy{a, b} {
		markAvailable(t, ns, m.Name)
		waitForCondition(t, m, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
		waitForCondition(t, m, conditions.Exposed, metav1.ConditionTrue, conditions.ReasonIngressApplied)
	}

	// A change to a watched child wakes the operator up: nothing to do.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}}
	expectNoMutations(t, op, ns, "microservicedeploy", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/touched": time.Now().String()} })
	})
	// So does a change to the quota's status, as pods come and go.
	expectNoMutations(t, op, ns, "microservicedeploy-quota", func() {
		q := msdQuota(ns)
		get(t, q)
		q.Status.Hard = q.Spec.Hard
		q.Status.Used = corev1.ResourceList{corev1.ResourceName("requests.cpu"): resource.MustParse("6")}
		if err := k8s.Status().Update(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	})

	// A restart passes over everything again: nothing to do either.
	op.Stop()
	before, beforeQuota := reconcileCount(t, "microservicedeploy"), reconcileCount(t, "microservicedeploy-quota")
	op2 := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{MicroServiceDeploy: opts}})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "microservicedeploy") >= before+2 && reconcileCount(t, "microservicedeploy-quota") > beforeQuota,
			"no passes after the restart"
	})
	time.Sleep(time.Second)
	if muts := op2.Mutations.In(ns); len(muts) != 0 {
		t.Fatalf("after a restart the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}

// A restart passes over the quota and the PriorityClass too: an instance
// without resource requirements (a quota with no limits) and the
// cluster-scoped PriorityClass must be found up to date, not applied again.
func TestMicroServiceDeployRestartRewritesNeitherQuotaNorPriorityClass(t *testing.T) {
	ns, op := startMSDOperator(t, microservicedeploy.Options{})
	m := newMSD(t, ns, "ms-no-resources", func(m *customv1.MicroServiceDeploy) {
		m.Spec.ResourceRequirements, m.Spec.Autoscaling = customv1.ResourceRequirements{}, false
	})
	testenv.Create(t, k8s, m)
	waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionTrue, conditions.ReasonQuotaApplied)
	op.Mutations.WaitQuiet(t, ns, time.Second, 20*time.Second)

	op.Stop()
	before := reconcileCount(t, "microservicedeploy-quota")
	op2 := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "microservicedeploy-quota") > before, "no quota pass after the restart"
	})
	time.Sleep(time.Second)
	muts := append(op2.Mutations.In(ns), op2.Mutations.In("")...)
	if len(muts) != 0 {
		t.Fatalf("after a restart the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}
