package realpods

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// The password Secret deleted while the cluster runs and a client writes
// (persistence on): the operator makes no new password, which the running
// nodes would refuse, and says SecretMissing. The primary's pod is then
// deleted; its new pod cannot start without the Secret. The operator
// still fails over, with the password it last reached the nodes with, and
// writes go on through the new primary and the replica left. The Secret
// made again as the message says (its keys, the nodes' password and the
// cluster's labels), the pod starts and rejoins as a replica: Running,
// with no acknowledged write lost.
func TestRedisFaultPasswordSecretDeletedThenThePrimaryFails(t *testing.T) {
	c, _, r := startCell(t, "nosecret", true)
	ctx, ns := context.Background(), r.rec.Namespace
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.rec.Name}, secret); err != nil {
		t.Fatal(err)
	}
	w := r.startWriterWaiting("nosecret", 1, cellWritePause)
	waitWrites(t, w, 200)

	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, redisv1alpha1.ReasonSecretMissing, 2*time.Minute)
	t.Logf("Ready=False SecretMissing: %s", cond.Message)
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the password Secret was made again (%v): the running nodes would refuse a new password", err)
	}

	old, deleted := r.deletePrimaryAndWaitForANewOne()
	t.Logf("with the Secret missing, %s was promoted %v after %s's pod was deleted", r.rec.Status.Primary, time.Since(deleted).Round(100*time.Millisecond), old)
	waitWrites(t, w, 50)

	made := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret.Name, Labels: secret.Labels}, Type: secret.Type, Data: secret.Data}
	if err := c.Create(ctx, made); err != nil {
		t.Fatal(err)
	}
	r.waitRunning(5 * time.Minute)
	toReady := time.Since(deleted)
	acked, lost := r.finish(w, "the password Secret deleted, then the primary's pod deleted; the Secret made again", toReady)
	t.Logf("the primary is %s; Running %v after the pod was deleted; %d writes acknowledged, %d lost", r.rec.Status.Primary, toReady.Round(100*time.Millisecond), acked, lost)
}

// With the certificate the operator issues (`tls: {}`) due for renewal
// while a ValidatingAdmissionPolicy refuses every change of its Secret,
// and a client writing: the operator cannot renew and says so
// (ApplyRejected, naming spec.tls), and when the primary's pod is then
// deleted it still fails over, with the certificate the nodes have. The
// policy removed, the certificate is renewed, every node serves it, and
// the cluster is Running with no acknowledged write lost.
func TestRedisFaultRenewalRefusedByAPolicyWhileThePrimaryFails(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	r := newRedisCellWith(t, c, ns, "refused", true, 3, "  tls: {}\n")
	name := redisenterprisecluster.TLSSecretName(r.rec.Name, r.rec.Spec.TLS)
	r.tls = issuedTLS(t, c, ns, name)
	w := r.startWriterWaiting("refused", 1, cellWritePause)
	waitWrites(t, w, 200)

	// The policy lets the Secret's data change only with a new value of
	// an annotation: the test's write, never the operator's renewal.
	const allowed = "realpods.test/written"
	remove := testenv.DenyByPolicy(t, c, "deny-renewal-"+ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, fmt.Sprintf("object.metadata.namespace != %[1]q || object.metadata.name != %[2]q || object.data == oldObject.data || "+
		"(has(object.metadata.annotations) && %[3]q in object.metadata.annotations && "+
		"(!has(oldObject.metadata.annotations) || !(%[3]q in oldObject.metadata.annotations) || oldObject.metadata.annotations[%[3]q] != object.metadata.annotations[%[3]q]))",
		ns, name, allowed), "the certificate of this Secret may not change, by policy")
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		probe := secret.DeepCopy()
		probe.Data[tlssecret.CertKey] = append([]byte(nil), probe.Data[tlssecret.CAKey]...)
		err := c.Update(ctx, probe, client.DryRunAll)
		return err != nil, fmt.Sprintf("the policy is not enforced yet (a dry run: %v)", err)
	})
	// A certificate of the cluster's CA with 10 days left: within the 30
	// days before its expiry at which the operator renews it.
	caSecret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: redisenterprisecluster.TLSCASecretName(r.rec.Name)}, caSecret); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(caSecret.Data[tlssecret.CertKey], caSecret.Data[tlssecret.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	due, err := ca.Issue(r.rec.Name, redisenterprisecluster.TLSHosts(r.rec.Name, ns), time.Now(), 10*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = due.Data()
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, allowed, due.Serial.String())
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, conditions.ReasonApplyRejected, 3*time.Minute)
	t.Logf("the renewal refused: Ready=False %s: %s", cond.Reason, cond.Message)

	old, deleted := r.deletePrimaryAndWaitForANewOne()
	t.Logf("with the renewal refused, %s was promoted %v after %s's pod was deleted", r.rec.Status.Primary, time.Since(deleted).Round(100*time.Millisecond), old)
	waitWrites(t, w, 50)

	remove()
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		got := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, err.Error()
		}
		return !bytes.Equal(got.Data[tlssecret.CertKey], due.Cert), "the certificate with 10 days left is still in the Secret"
	})
	r.waitRunning(5 * time.Minute)
	toReady := time.Since(deleted)
	acked, lost := r.finish(w, "TLS issued: the renewal refused by a policy, then the primary's pod deleted; the policy removed", toReady)
	t.Logf("the primary is %s; Running %v after the pod was deleted; %d writes acknowledged, %d lost", r.rec.Status.Primary, toReady.Round(100*time.Millisecond), acked, lost)
}

// With the certificate the operator issues (`tls: {}`) and a client
// writing, the Secret of the issued CA is deleted: the operator makes no
// new CA, which the running nodes would not trust, and says SecretMissing
// naming it; the certificate the nodes serve is left as it is. The
// primary's pod is then deleted: the operator fails over with the
// certificate the nodes have, and the pod comes back (its certificate's
// Secret is there) as a replica. The CA Secret restored from a copy, the
// cluster is Running, every node serving the certificate it served
// before, with no acknowledged write lost.
func TestRedisFaultIssuedCASecretDeletedThenThePrimaryFails(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	r := newRedisCellWith(t, c, ns, "noca", true, 3, "  tls: {}\n")
	certName := redisenterprisecluster.TLSSecretName(r.rec.Name, r.rec.Spec.TLS)
	r.tls = issuedTLS(t, c, ns, certName)
	cert := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, cert); err != nil {
		t.Fatal(err)
	}
	caSecret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: redisenterprisecluster.TLSCASecretName(r.rec.Name)}, caSecret); err != nil {
		t.Fatal(err)
	}
	w := r.startWriterWaiting("noca", 1, cellWritePause)
	waitWrites(t, w, 200)

	if err := c.Delete(ctx, caSecret); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, redisv1alpha1.ReasonSecretMissing, 2*time.Minute)
	t.Logf("Ready=False SecretMissing: %s", cond.Message)
	if !strings.Contains(cond.Message, caSecret.Name) {
		t.Errorf("the message does not name the CA Secret %s: %s", caSecret.Name, cond.Message)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(caSecret), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the CA Secret was made again (%v): the running nodes would not trust a new CA", err)
	}

	old, deleted := r.deletePrimaryAndWaitForANewOne()
	t.Logf("with the CA Secret missing, %s was promoted %v after %s's pod was deleted", r.rec.Status.Primary, time.Since(deleted).Round(100*time.Millisecond), old)
	waitWrites(t, w, 50)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, cert); err != nil {
		t.Fatal(err)
	}

	restored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: caSecret.Name, Labels: caSecret.Labels}, Type: caSecret.Type, Data: caSecret.Data}
	if err := c.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	r.waitRunning(5 * time.Minute)
	toReady := time.Since(deleted)
	after := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after.Data[tlssecret.CertKey], cert.Data[tlssecret.CertKey]) {
		t.Errorf("the nodes' certificate was issued again while its CA was missing or after it was restored")
	}
	acked, lost := r.finish(w, "TLS issued: the CA Secret deleted, then the primary's pod deleted; the CA Secret restored", toReady)
	t.Logf("the primary is %s; Running %v after the pod was deleted; %d writes acknowledged, %d lost", r.rec.Status.Primary, toReady.Round(100*time.Millisecond), acked, lost)
}

// deletePrimaryAndWaitForANewOne deletes the pod of the recorded primary
// and waits until the status names another node, which answers as a
// primary; it returns the old primary and when its pod was deleted.
func (r *redisCluster) deletePrimaryAndWaitForANewOne() (string, time.Time) {
	r.t.Helper()
	old := r.rec.Status.Primary
	deleted := time.Now()
	if err := r.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.rec.Namespace, Name: old}}); err != nil {
		r.t.Fatal(err)
	}
	testenv.Eventually(r.t, 3*time.Minute, func() (bool, string) {
		r.refresh()
		if r.rec.Status.Primary == old {
			return false, "the primary is still " + old
		}
		info, err := r.replication(r.rec.Status.Primary)
		return err == nil && info["role"] == "master", fmt.Sprintf("%s: role %s (%v)", r.rec.Status.Primary, info["role"], err)
	})
	return old, deleted
}
