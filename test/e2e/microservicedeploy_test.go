package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

const msdSample = "custom_v1_microservicedeploy.yaml"

// The seed sample, applied unchanged (3 replicas, autoscaling, needAuth),
// becomes Ready with its six children and three Running pods inside the
// namespace's quota; the HPA, not the operator, owns the replica count;
// idle parks it and restores it.
func TestMicroServiceDeploySampleRunsAutoscaledAndIdles(t *testing.T) {
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	m := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, msdSample, m, ns)
	if err := c.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	name := m.Name
	waitReady(t, c, m, 2*time.Minute)

	for _, child := range []client.Object{
		&corev1.ServiceAccount{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.Deployment{}, &autoscalingv2.HorizontalPodAutoscaler{},
	} {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, child); err != nil {
			t.Fatalf("%T: %v", child, err)
		}
		if !metav1.IsControlledBy(child, m) {
			t.Errorf("%T is not controlled by the MicroServiceDeploy", child)
		}
	}
	quota := &corev1.ResourceQuota{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: microservicedeploy.QuotaName}, quota); err != nil {
		t.Fatalf("quota: %v", err)
	}
	if len(quota.OwnerReferences) != 0 {
		t.Errorf("quota owners = %v, want none", quota.OwnerReferences)
	}
	msdExpectPods(t, c, ns, name, 3, "")
	// The quota controller counts the three pods: 2 cpu each.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(quota), quota); err != nil {
			return false, err.Error()
		}
		used := quota.Status.Used[corev1.ResourceName("requests.cpu")]
		return used.String() == "6", fmt.Sprintf("quota used %v of %v", quota.Status.Used, quota.Status.Hard)
	})

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	owners := func() []string {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			t.Fatal(err)
		}
		return testenv.ReplicasOwners(t, dep)
	}
	operatorManager := engine.FieldOwner("microservicedeploy")
	if got := owners(); msdHas(got, operatorManager) {
		t.Errorf("the operator owns spec.replicas under autoscaling: %v", got)
	}
	// Someone scales the Deployment below the HPA's minimum: the HPA scales
	// it back, and from then on owns the field; the operator never wrote it.
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(context.Background(), dep, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if err := c.SubResource("scale").Update(context.Background(), dep, client.WithSubResourceBody(scale), client.FieldOwner("e2e-test")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		got := owners()
		return ptr.Deref(dep.Spec.Replicas, 0) == 3 && !msdHas(got, "e2e-test") && !msdHas(got, operatorManager),
			fmt.Sprintf("replicas %d owned by %v", ptr.Deref(dep.Spec.Replicas, 0), got)
	})
	t.Logf("spec.replicas is owned by %v", owners())
	waitReady(t, c, m, 2*time.Minute)

	// Idle: no pods, no HPA; the Service, ConfigMap and ServiceAccount stay.
	msdUpdateSpec(t, c, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Idle = true })
	waitReady(t, c, m, 2*time.Minute)
	msdExpectPods(t, c, ns, name, 0, "")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &autoscalingv2.HorizontalPodAutoscaler{}); !apierrors.IsNotFound(err) {
		t.Errorf("the HPA of an idle instance: %v", err)
	}
	for _, kept := range []client.Object{&corev1.ServiceAccount{}, &corev1.ConfigMap{}, &corev1.Service{}} {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, kept); err != nil {
			t.Errorf("%T of an idle instance: %v", kept, err)
		}
	}
	if cond := msdCondition(m, conditions.Idle); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("Idle condition = %+v", cond)
	}

	// Idle off: the instance runs again as before.
	msdUpdateSpec(t, c, m, func(m *customv1.MicroServiceDeploy) { m.Spec.Idle = false })
	waitReady(t, c, m, 2*time.Minute)
	msdExpectPods(t, c, ns, name, 3, "")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
		t.Errorf("the HPA after idle: %v", err)
	}
	if got := owners(); msdHas(got, operatorManager) {
		t.Errorf("the operator owns spec.replicas after idle: %v", got)
	}
}

// Two instances in one namespace share one quota sized for both, run inside
// it, roll their pods on a configuration change, and take the quota with
// them when both are deleted.
func TestMicroServiceDeployInstancesShareAQuotaAndRollOnConfig(t *testing.T) {
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	a := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, msdSample, a, ns)
	b := a.DeepCopy()
	b.Name, b.Spec.FullName = "ms-sample-v1s1", "ms-sample-v1s1"
	b.Spec.Autoscaling, b.Spec.Replicas = false, ptr.To[int32](2)
	for _, m := range []*customv1.MicroServiceDeploy{a, b} {
		if err := c.Create(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*customv1.MicroServiceDeploy{a, b} {
		waitReady(t, c, m, 2*time.Minute)
	}
	msdExpectPods(t, c, ns, a.Name, 3, "")
	msdExpectPods(t, c, ns, b.Name, 2, "")

	quotas := &corev1.ResourceQuotaList{}
	if err := c.List(context.Background(), quotas, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(quotas.Items) != 1 {
		t.Fatalf("%d quotas in the namespace, want 1", len(quotas.Items))
	}
	quota := &quotas.Items[0]
	// a: 6 pods at most + 2 of surge + 6 terminating; b: 2 + 1 + 2; 2 cpu
	// and 4Gi each.
	want := map[string]string{"requests.cpu": "38", "limits.cpu": "38", "requests.memory": "76Gi", "limits.memory": "76Gi"}
	got := map[string]string{}
	for k, v := range quota.Spec.Hard {
		got[string(k)] = v.String()
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("quota hard = %v, want %v", got, want)
	}

	// A new configuration rolls b's pods: every Running pod is new and
	// carries the new configuration's hash.
	old := msdPodUIDs(t, c, ns, b.Name)
	msdUpdateSpec(t, c, b, func(m *customv1.MicroServiceDeploy) { m.Spec.Config = "password=99999999" })
	newHash := microservicedeploy.ConfigHash("password=99999999")
	waitReady(t, c, b, 2*time.Minute)
	msdExpectPods(t, c, ns, b.Name, 2, newHash)
	for uid := range msdPodUIDs(t, c, ns, b.Name) {
		if old[uid] {
			t.Errorf("pod %s survived the configuration change", uid)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: b.Name}, cm); err != nil || cm.Data["config"] != "password=99999999" {
		t.Errorf("ConfigMap = %v (%v)", cm.Data, err)
	}

	// Both go: so do their children (through the garbage collector, which
	// may take up to its 30s discovery resync to learn a CRD installed after
	// it started) and the quota.
	for _, m := range []*customv1.MicroServiceDeploy{a, b} {
		if err := c.Delete(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for _, gone := range []client.Object{
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: microservicedeploy.QuotaName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Name}},
	} {
		testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
			err := c.Get(context.Background(), client.ObjectKeyFromObject(gone), gone)
			return apierrors.IsNotFound(err), fmt.Sprintf("%T %s still there: %v", gone, gone.GetName(), err)
		})
	}
}

// msdUpdateSpec changes m's spec, retrying on conflicts.
func msdUpdateSpec(t *testing.T, c client.Client, m *customv1.MicroServiceDeploy, mutate func(*customv1.MicroServiceDeploy)) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		mutate(m)
		if err := c.Update(context.Background(), m); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// msdExpectPods waits until exactly n pods of the instance exist, all
// Running on the kwok node (and, when hash is set, of that configuration).
func msdExpectPods(t *testing.T, c client.Client, ns, instance string, n int, hash string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(microservicedeploy.Selector(instance))); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == cluster.FakeNodeName && p.DeletionTimestamp == nil &&
				(hash == "" || p.Annotations[microservicedeploy.ConfigHashAnnotation] == hash) {
				running++
			}
		}
		return running == n && len(pods.Items) == n, fmt.Sprintf("%d of %d pods Running as wanted, want %d: %v", running, len(pods.Items), n, testenv.PodSummary(pods))
	})
}

func msdPodUIDs(t *testing.T, c client.Client, ns, instance string) map[string]bool {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(microservicedeploy.Selector(instance))); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[string(p.UID)] = true
	}
	return out
}

func msdHas(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func msdCondition(obj conditioned, condType string) *metav1.Condition {
	for i, c := range obj.GetConditions() {
		if c.Type == condType {
			return &obj.GetConditions()[i]
		}
	}
	return nil
}
