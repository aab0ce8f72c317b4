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
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/test/testenv"
)

func tlsPolicy() *etcdv1beta2.TLSPolicy {
	return &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: "peer-tls", ServerSecret: "server-tls"},
		OperatorSecret: "operator-tls",
	}}
}

// A cluster with TLS whose Secrets are missing, lack a key or hold no
// certificate says which field and Secret are at fault (TLSSecretInvalid),
// applies nothing while they are, looks again later (the operator does not
// watch the user's Secrets), starts once they serve, and deletes nothing
// when one of them breaks afterwards.
func TestEtcdClusterWithTLSWaitsForItsSecretsAndSaysWhichCannotServe(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", TLS: tlsPolicy()}}
	testenv.Create(t, k8s, e)
	r := controller.NewObservedEtcdReconciler(k8s, (&etcd.Fake{}).Dial, nil, events.NewFakeRecorder(100))
	pass := func(t *testing.T) {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e)})
		if err != nil {
			t.Fatal(err)
		}
		get(t, e)
		if c := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready); c != nil && c.Reason == conditions.ReasonTLSSecretInvalid && res.RequeueAfter <= 0 {
			t.Errorf("result %+v: a Secret the operator does not watch must be looked at again", res)
		}
	}
	expect := func(t *testing.T, message string) {
		t.Helper()
		c := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != conditions.ReasonTLSSecretInvalid || !strings.Contains(c.Message, message) {
			t.Fatalf("Ready %+v, want False, %s, naming %q", c, conditions.ReasonTLSSecretInvalid, message)
		}
	}
	stsExists := func() bool {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "t"}, &appsv1.StatefulSet{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	ca, err := pki.NewCA("etcd-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(cn string) pki.Pair {
		p, err := ca.Issue(cn, []string{"*.t." + ns + ".svc", "t-client." + ns + ".svc"}, time.Now(), 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
	}

	pass(t)
	expect(t, "spec.TLS.static.member.serverSecret: Secret server-tls: not found")
	if stsExists() {
		t.Fatal("a StatefulSet was applied while its Secrets are missing")
	}

	server := pair("server").Data()
	delete(server, "ca.crt")
	testenv.Create(t, k8s, secret("server-tls", server))
	pass(t)
	expect(t, `spec.TLS.static.member.serverSecret: Secret server-tls: no key "ca.crt"`)

	server = pair("server").Data()
	srv := secret("server-tls", server)
	if err := k8s.Update(ctx, srv); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, k8s, secret("peer-tls", pair("peer").Data()))
	broken := pair("operator").Data()
	broken["tls.key"] = pair("other").Key
	testenv.Create(t, k8s, secret("operator-tls", broken))
	pass(t)
	expect(t, "spec.TLS.static.operatorSecret: Secret operator-tls: tls.crt and tls.key")
	if stsExists() {
		t.Fatal("a StatefulSet was applied while the operator's Secret cannot serve")
	}

	op := secret("operator-tls", pair("operator").Data())
	if err := k8s.Update(ctx, op); err != nil {
		t.Fatal(err)
	}
	pass(t)
	if c := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready); c == nil || c.Reason == conditions.ReasonTLSSecretInvalid {
		t.Fatalf("Ready %+v once every Secret serves", c)
	}
	if !stsExists() {
		t.Fatal("no StatefulSet once every Secret serves")
	}

	// The peer Secret deleted: reported, and nothing of the cluster goes.
	if err := k8s.Delete(ctx, secret("peer-tls", nil)); err != nil {
		t.Fatal(err)
	}
	pass(t)
	expect(t, "spec.TLS.static.member.peerSecret: Secret peer-tls: not found")
	if !stsExists() {
		t.Fatal("the StatefulSet was deleted when a Secret went")
	}
}

// spec.TLS names all three Secrets, or none; it may be set on a running
// cluster (the members move to TLS), but never removed: they do not move
// back.
func TestEtcdClusterTLSAdmission(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	sample := func(name string) *etcdv1beta2.EtcdCluster {
		return &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
	}
	for _, tt := range []struct {
		name    string
		mutate  func(*etcdv1beta2.TLSPolicy)
		wantErr string
	}{
		{"all three Secrets", func(*etcdv1beta2.TLSPolicy) {}, ""},
		{"no operator Secret", func(p *etcdv1beta2.TLSPolicy) { p.Static.OperatorSecret = "" }, "spec.TLS.static.operatorSecret"},
		{"no peer Secret", func(p *etcdv1beta2.TLSPolicy) { p.Static.Member.PeerSecret = "" }, "spec.TLS.static.member.peerSecret"},
		{"no member Secrets", func(p *etcdv1beta2.TLSPolicy) { p.Static.Member = nil }, "spec.TLS.static.member"},
		{"no static: the operator issues the certificates", func(p *etcdv1beta2.TLSPolicy) { p.Static = nil }, ""},
		{"a Secret name with a capital", func(p *etcdv1beta2.TLSPolicy) { p.Static.Member.ServerSecret = "Server" }, "spec.TLS.static.member.serverSecret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := sample("tls")
			e.Spec.TLS = tlsPolicy()
			tt.mutate(e.Spec.TLS)
			testenv.ExpectAdmission(t, k8s.Create(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}

	plain := sample("plain")
	testenv.Create(t, k8s, plain)
	t.Run("TLS turned on for a running cluster", func(t *testing.T) {
		e := plain.DeepCopy()
		e.Spec.TLS = tlsPolicy()
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "")
	})
	secure := sample("secure")
	secure.Spec.TLS = tlsPolicy()
	testenv.Create(t, k8s, secure)
	t.Run("TLS turned off", func(t *testing.T) {
		e := secure.DeepCopy()
		e.Spec.TLS = nil
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "spec.TLS cannot be removed")
	})
	t.Run("another Secret named", func(t *testing.T) {
		e := secure.DeepCopy()
		e.Spec.TLS.Static.OperatorSecret = "renewed"
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "spec.TLS cannot change")
	})
	t.Run("an unrelated change", func(t *testing.T) {
		e := secure.DeepCopy()
		e.Spec.Size = 5
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "")
	})
}
