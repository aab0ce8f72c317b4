package controller_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The sample, applied as written, gets its children: a Secret with the
// sample's username and a generated password that later passes keep, a
// StatefulSet whose resources read `4 Gi` as 4Gi, claims of the gp2 class,
// role files that make the first node the primary, and the Services.
// Without pods (the API-only cluster), the cluster waits for its first
// primary.
func TestRedisEnterpriseClusterSampleCreatesChildren(t *testing.T) {
	ns, _ := startOperator(t)
	u := testenv.RedisSampleObject(t, ns)
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	const name = "redis-enterprise"
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: n} }
	secret, sts := &corev1.Secret{ObjectMeta: meta(name)}, &appsv1.StatefulSet{ObjectMeta: meta(name)}
	cm, pdb := &corev1.ConfigMap{ObjectMeta: meta(redisenterprisecluster.ConfigMapName(name))}, &policyv1.PodDisruptionBudget{ObjectMeta: meta(name)}
	primarySvc, uiSvc, nodesSvc := &corev1.Service{ObjectMeta: meta(name)}, &corev1.Service{ObjectMeta: meta(redisenterprisecluster.UIServiceName(name))}, &corev1.Service{ObjectMeta: meta(redisenterprisecluster.NodesServiceName(name))}
	for _, o := range []client.Object{secret, sts, cm, pdb, primarySvc, uiSvc, nodesSvc} {
		waitForObject(t, o)
	}
	password := string(secret.Data[redisenterprisecluster.SecretPassword])
	if string(secret.Data[redisenterprisecluster.SecretUsername]) != "admin@acme.com" || len(password) != 32 {
		t.Errorf("Secret: username %q, password of %d characters", secret.Data[redisenterprisecluster.SecretUsername], len(password))
	}
	c := sts.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits.Memory().String() != "4Gi" || c.Resources.Requests.Memory().String() != "4Gi" || c.Resources.Limits.Cpu().String() != "400m" {
		t.Errorf("resources = %+v, want 4Gi and 400m", c.Resources)
	}
	// The sample names Redis Enterprise's image: the open-source one runs.
	if c.Image != redisenterprisecluster.DefaultImage || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s, pull policy %s; want %s in place of the sample's redislabs/redis", c.Image, c.ImagePullPolicy, redisenterprisecluster.DefaultImage)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || *sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "gp2" || *sts.Spec.Replicas != 3 ||
		sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Errorf("StatefulSet spec = %+v", sts.Spec)
	}
	// No primary yet: every node boots following none, refusing writes.
	for i := range 3 {
		if role := cm.Data[redisenterprisecluster.RoleFile(redisenterprisecluster.PodName(name, i))]; !strings.Contains(role, "replicaof 127.0.0.1 1\n") {
			t.Errorf("role file of node %d: %q, want one that follows no primary", i, role)
		}
	}
	// The sample's LoadBalancer ui Service selects the console, never a
	// node: it must not publish the primary's port.
	if uiSvc.Spec.Type != corev1.ServiceTypeLoadBalancer || uiSvc.Spec.Selector[resources.LabelName] != redisenterprisecluster.ConsoleKindName ||
		len(uiSvc.Spec.Ports) != 2 || uiSvc.Spec.Ports[0].Port != redisenterprisecluster.UIPort || uiSvc.Spec.Ports[1].Port != redisenterprisecluster.APIPort ||
		primarySvc.Spec.Selector[redisenterprisecluster.RoleLabel] != redisv1alpha1.RolePrimary || nodesSvc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Services: ui %s %v %+v, primary %v, nodes %s", uiSvc.Spec.Type, uiSvc.Spec.Selector, uiSvc.Spec.Ports, primarySvc.Spec.Selector, nodesSvc.Spec.ClusterIP)
	}
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: meta(name)}
	waitForCondition(t, r, conditions.Ready, metav1.ConditionFalse, redisv1alpha1.ReasonBootstrapping)
	if r.Status.State != redisv1alpha1.StateBootstrappingFirstPod || strings.Contains(r.Status.Conditions[0].Message, password) {
		t.Errorf("status = %+v", r.Status)
	}
	replaced := waitForCondition(t, r, redisv1alpha1.ConditionImageReplaced, metav1.ConditionTrue, redisv1alpha1.ReasonProprietaryImage)
	if want := "spec.redisEnterpriseImageSpec.repository redislabs/redis is the proprietary Redis Enterprise image; running redis:7.0.15 instead"; replaced.Message != want {
		t.Errorf("ImageReplaced: %q, want %q", replaced.Message, want)
	}
	waitForEvent(t, r, redisv1alpha1.ReasonProprietaryImage)

	// A new username is written; the password is kept.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "ops@acme.com", "spec", "username"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, r, conditions.Ready, metav1.ConditionFalse, redisv1alpha1.ReasonBootstrapping)
	waitForSecret(t, secret, func(s *corev1.Secret) bool {
		return string(s.Data[redisenterprisecluster.SecretUsername]) == "ops@acme.com"
	})
	if got := string(secret.Data[redisenterprisecluster.SecretPassword]); got != password {
		t.Error("the password changed with the username")
	}
}

// A request above its limit passes admission (a quantity may hold spaces)
// and is refused at reconcile, naming both fields, with no child created.
func TestRedisEnterpriseClusterRequestAboveLimitIsInvalidSpec(t *testing.T) {
	ns, _ := startOperator(t)
	u := testenv.RedisSampleObject(t, ns)
	if err := unstructured.SetNestedField(u.Object, "8 Gi", "spec", "redisEnterpriseNodeResources", "requests", "memory"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.GetName()}}
	c := waitForCondition(t, r, conditions.Ready, metav1.ConditionFalse, conditions.ReasonInvalidSpec)
	if !strings.Contains(c.Message, "spec.redisEnterpriseNodeResources.requests.memory") || !strings.Contains(c.Message, "spec.redisEnterpriseNodeResources.limits.memory") ||
		r.Status.State != redisv1alpha1.StateError {
		t.Errorf("Ready: %s; state %s", c.Message, r.Status.State)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: u.GetName()}, &appsv1.StatefulSet{}); err == nil {
		t.Error("a StatefulSet was created for an invalid spec")
	}
}

func waitForSecret(t *testing.T, s *corev1.Secret, ok func(*corev1.Secret) bool) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s); err != nil {
			return false, err.Error()
		}
		return ok(s), "Secret " + s.Name + " not updated yet"
	})
}
