package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/test/testenv"
)

// A RedisEnterpriseCluster with spec.tls whose Secret is missing or
// cannot serve says so, naming the field and the Secret
// (TLSSecretInvalid), applies nothing meanwhile and looks again later;
// once the Secret serves, the nodes are built with it.
func TestRedisEnterpriseClusterWithTLSWaitsForItsSecretAndSaysWhyItCannotServe(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "r-tls"}}}
	testenv.Create(t, k8s, r)
	rec := controller.NewRedisReconciler(k8s, &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, clock.RealClock{}, time.Minute)
	pass := func(t *testing.T) ctrl.Result {
		t.Helper()
		res, err := rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(r)})
		if err != nil {
			t.Fatal(err)
		}
		get(t, r)
		return res
	}
	expect := func(t *testing.T, res ctrl.Result, message string) {
		t.Helper()
		c := meta.FindStatusCondition(r.Status.Conditions, conditions.Ready)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != conditions.ReasonTLSSecretInvalid || !strings.Contains(c.Message, message) {
			t.Fatalf("Ready %+v, want False, %s, naming %q", c, conditions.ReasonTLSSecretInvalid, message)
		}
		if res.RequeueAfter <= 0 {
			t.Errorf("result %+v: a Secret the operator does not watch must be looked at again", res)
		}
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, &appsv1.StatefulSet{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("StatefulSet: %v, want none while the Secret cannot serve", err)
		}
	}
	expect(t, pass(t), "spec.tls.secretName: Secret r-tls: not found")

	ca, err := pki.NewCA("redis-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("r", []string{"r." + ns + ".svc"}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data := pair.Data()
	data["ca.crt"] = []byte("not a certificate")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r-tls"}, Data: data}
	testenv.Create(t, k8s, secret)
	expect(t, pass(t), "spec.tls.secretName: Secret r-tls: ca.crt")

	secret.Data = pair.Data()
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	pass(t)
	if c := meta.FindStatusCondition(r.Status.Conditions, conditions.Ready); c != nil && c.Reason == conditions.ReasonTLSSecretInvalid {
		t.Fatalf("Ready %+v once the Secret serves", c)
	}
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r"}, sts); err != nil {
		t.Fatalf("StatefulSet once the Secret serves: %v", err)
	}
	var mounted string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "r-tls" {
			mounted = v.Name
		}
	}
	if mounted == "" {
		t.Errorf("the nodes do not mount r-tls: volumes %+v", sts.Spec.Template.Spec.Volumes)
	}
}

// spec.tls names its Secret, or none (the operator issues it); it may be
// set on a running cluster (the nodes roll to TLS), but never removed.
func TestRedisEnterpriseClusterTLSAdmission(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	sample := func(name string) *redisv1alpha1.RedisEnterpriseCluster {
		return &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}}
	}
	for _, tt := range []struct{ secret, wantErr string }{
		{"r-tls", ""},
		{"", ""},
		{"R_TLS", "spec.tls.secretName"},
	} {
		t.Run("secret "+tt.secret, func(t *testing.T) {
			r := sample("tls")
			r.Spec.TLS = &redisv1alpha1.TLS{SecretName: tt.secret}
			testenv.ExpectAdmission(t, k8s.Create(ctx, r, client.DryRunAll), tt.wantErr)
		})
	}
	plain := sample("plain")
	testenv.Create(t, k8s, plain)
	t.Run("TLS turned on for a running cluster", func(t *testing.T) {
		r := plain.DeepCopy()
		r.Spec.TLS = &redisv1alpha1.TLS{SecretName: "r-tls"}
		testenv.ExpectAdmission(t, k8s.Update(ctx, r, client.DryRunAll), "")
	})
	secure := sample("secure")
	secure.Spec.TLS = &redisv1alpha1.TLS{SecretName: "r-tls"}
	testenv.Create(t, k8s, secure)
	t.Run("another Secret named", func(t *testing.T) {
		r := secure.DeepCopy()
		r.Spec.TLS.SecretName = "other"
		testenv.ExpectAdmission(t, k8s.Update(ctx, r, client.DryRunAll), "spec.tls cannot change")
	})
	t.Run("TLS turned off", func(t *testing.T) {
		r := secure.DeepCopy()
		r.Spec.TLS = nil
		testenv.ExpectAdmission(t, k8s.Update(ctx, r, client.DryRunAll), "spec.tls cannot be removed")
	})
}
