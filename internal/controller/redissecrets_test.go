package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The password Secret deleted while the cluster has pods: the operator
// makes no new password (the running nodes would refuse it, and a
// restarted replica could not reach its primary); it says which Secret is
// missing and how to make it again, and still fails over with the
// password it last reached the nodes with. The Secret made again with the
// cluster's labels is adopted.
func TestRedisPasswordSecretDeletedWhileTheClusterHasPodsIsReportedAndNoneIsMade(t *testing.T) {
	f := newSecureFixture(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}, runningNodes(), nil)
	f.run()
	secret := f.secret("r")
	if err := k8s.Delete(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != redisv1alpha1.ReasonSecretMissing ||
		!strings.Contains(c.Message, "Secret r,") || !strings.Contains(c.Message, "printenv REDISCLI_AUTH") {
		t.Fatalf("Ready %+v, want False, %s, naming the Secret and how to make it again", c, redisv1alpha1.ReasonSecretMissing)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(secret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret r: %v, want none made", err)
	}

	f.failPrimaryPastTheWindow()
	if f.obj.Status.Primary == "r-0" || len(f.redis.CallsMatching("promote")) != 1 || f.readyReason() != redisv1alpha1.ReasonSecretMissing {
		t.Fatalf("primary %s, calls %v, %s; want a failover with the password remembered, the Secret still reported",
			f.obj.Status.Primary, f.redis.Calls, f.readyMessage())
	}

	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r",
		Labels: resources.Labels(redisenterprisecluster.Selector("r"))}, Data: secret.Data})
	f.mustPass()
	if r := f.readyReason(); r == redisv1alpha1.ReasonSecretMissing || r == conditions.ReasonChildConflict {
		t.Errorf("%s once the Secret is made again", f.readyMessage())
	}
	if got := f.secret("r"); string(got.Data[redisenterprisecluster.SecretPassword]) != f.secure.Password || !metav1.IsControlledBy(got, f.obj) {
		t.Errorf("the Secret made again: password kept %v, adopted %v", string(got.Data[redisenterprisecluster.SecretPassword]) == f.secure.Password,
			metav1.IsControlledBy(got, f.obj))
	}
}

// The CA Secret the operator issued the nodes' certificate from, deleted
// while the cluster has pods: the operator makes no new CA (the nodes'
// certificate would be issued anew from it, which the running nodes do
// not trust); it says which Secret is missing, keeps the certificate it
// issued, still reaches the nodes with it and fails over. The CA restored
// from a copy, all is as before.
func TestRedisIssuedCASecretDeletedWhileTheClusterHasPodsIsReportedAndNoneIsMade(t *testing.T) {
	f := newSecureFixture(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{}}, runningNodes(), nil)
	f.run()
	caSecret, issued := f.secret("r-tls-ca"), f.secret("r-tls")
	if err := k8s.Delete(context.Background(), caSecret); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != redisv1alpha1.ReasonSecretMissing || !strings.Contains(c.Message, "Secret r-tls-ca,") {
		t.Fatalf("Ready %+v, want False, %s, naming Secret r-tls-ca", c, redisv1alpha1.ReasonSecretMissing)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(caSecret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret r-tls-ca: %v, want none made", err)
	}
	if got := f.secret("r-tls"); got.ResourceVersion != issued.ResourceVersion {
		t.Fatal("the nodes' certificate was issued anew without its CA")
	}

	f.failPrimaryPastTheWindow()
	if f.obj.Status.Primary == "r-0" || len(f.redis.CallsMatching("promote")) != 1 {
		t.Fatalf("primary %s, calls %v, %s; want a failover through the certificate issued before", f.obj.Status.Primary, f.redis.Calls, f.readyMessage())
	}

	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r-tls-ca"}, Data: caSecret.Data})
	f.mustPass()
	if r := f.readyReason(); r == redisv1alpha1.ReasonSecretMissing {
		t.Errorf("%s once the CA is restored", f.readyMessage())
	}
	if got := f.secret("r-tls"); got.ResourceVersion != issued.ResourceVersion {
		t.Error("the nodes' certificate was issued anew from the restored CA")
	}
}

// The nodes' certificate, issued by the operator, due for renewal while
// a ValidatingAdmissionPolicy refuses every update of its Secret, and the
// primary fails: the pass cannot renew, says so naming spec.tls, and
// still fails over with the certificate the nodes have. The policy gone,
// the certificate is renewed.
func TestRedisRenewalRefusedAtAdmissionStillFailsOver(t *testing.T) {
	f := newSecureFixture(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{}}, runningNodes(), nil)
	f.run()
	issued := f.secret("r-tls")
	allow := denySecretUpdates(t, f.obj.Namespace, "r-tls")
	// 61 days on, the 90-day certificate is within the 30 days before its
	// expiry at which the operator renews it.
	f.clock.Step(61 * 24 * time.Hour)
	f.mustPass()
	if r := f.readyReason(); r != conditions.ReasonApplyRejected || !strings.Contains(f.readyMessage(), "spec.tls") {
		t.Fatalf("%s; want ApplyRejected naming spec.tls", f.readyMessage())
	}
	if got := f.secret("r-tls"); got.ResourceVersion != issued.ResourceVersion {
		t.Fatal("the Secret changed though the policy refuses every update")
	}

	f.failPrimaryPastTheWindow()
	if f.obj.Status.Primary == "r-0" || len(f.redis.CallsMatching("promote")) != 1 {
		t.Fatalf("primary %s, calls %v, %s; want a failover though the renewal is refused", f.obj.Status.Primary, f.redis.Calls, f.readyMessage())
	}

	allow()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		_ = f.pass()
		got := f.secret("r-tls")
		return got.ResourceVersion != issued.ResourceVersion && f.readyReason() != conditions.ReasonApplyRejected,
			fmt.Sprintf("Secret r-tls version %s (was %s); %s", got.ResourceVersion, issued.ResourceVersion, f.readyMessage())
	})
}

// denySecretUpdates installs a ValidatingAdmissionPolicy that refuses
// every update of the Secret name in ns, and waits until the API server
// enforces it. It returns a function that removes it.
func denySecretUpdates(t *testing.T, ns, name string) func() {
	t.Helper()
	ctx := context.Background()
	deny := testenv.DenyByPolicy(t, k8s, "deny-secret-"+ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", ns, name), "this Secret may not change, by policy")
	remove := func() {
		deny()
		// Enforced no more once a changed Secret passes a dry run.
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			s := &corev1.Secret{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
				return false, err.Error()
			}
			s.Labels = map[string]string{"probe": "x"}
			err := k8s.Update(ctx, s, client.DryRunAll)
			return err == nil, fmt.Sprintf("policy still enforced (dry-run error %v)", err)
		})
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err.Error()
		}
		s.Labels = map[string]string{"probe": "x"}
		err := k8s.Update(ctx, s, client.DryRunAll)
		return err != nil, fmt.Sprintf("policy not enforced yet (dry-run error %v)", err)
	})
	return remove
}

// Claims kept from an earlier cluster of the same name (claims outlive
// their cluster) are not the new cluster's: it gets its password.
func TestRedisClaimsOfAnEarlierClusterOfTheNameHoldNoPasswordBack(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-r-0", Labels: resources.Labels(redisenterprisecluster.Selector("r"))},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})
	// Creation times are in seconds.
	time.Sleep(1100 * time.Millisecond)
	obj := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}}
	testenv.Create(t, k8s, obj)
	f := &redisFixture{t: t, obj: obj, redis: &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, clock: clocktesting.NewFakeClock(time.Now())}
	f.r = controller.NewRedisReconciler(k8s, f.redis, f.clock, failoverWindow)
	_ = f.pass()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "r"}, s); err != nil || len(s.Data[redisenterprisecluster.SecretPassword]) == 0 {
		t.Fatalf("Secret r: %v, %d bytes of password; want one made (%s)", err, len(s.Data[redisenterprisecluster.SecretPassword]), f.readyReason())
	}
}

// failPrimaryPastTheWindow has the primary fail and runs a pass on each
// side of the failover window.
func (f *secureFixture) failPrimaryPastTheWindow() {
	f.t.Helper()
	f.primaryDown()
	f.mustPass()
	f.clock.Step(failoverWindow)
	f.mustPass()
}
