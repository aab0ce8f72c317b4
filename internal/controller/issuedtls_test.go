package controller_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// issued is what a test reads of a Secret the operator issued.
type issued struct {
	leaf            *x509.Certificate
	resourceVersion string
}

// readIssued reads the Secret name and checks that its certificate
// verifies against its ca.crt, which is the CA Secret's certificate, for
// each usage, and for host when not empty.
func readIssued(t *testing.T, ns, name, caSecret, host string, at time.Time) issued {
	t.Helper()
	s, ca := &corev1.Secret{}, &corev1.Secret{}
	get := func(name string, s *corev1.Secret) {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
	}
	get(name, s)
	get(caSecret, ca)
	if err := tlssecret.Check(s.Data); err != nil {
		t.Fatalf("Secret %s cannot serve: %v", name, err)
	}
	if string(s.Data[tlssecret.CAKey]) != string(ca.Data[tlssecret.CertKey]) {
		t.Fatalf("Secret %s's ca.crt is not the CA of Secret %s", name, caSecret)
	}
	leaf, err := tlssecret.Leaf(s.Data)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	block, _ := pem.Decode(ca.Data[tlssecret.CertKey])
	caCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool.AddCert(caCert)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("Secret %s, usage %v, host %q: %v", name, usage, host, err)
		}
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Controller != nil && *s.OwnerReferences[0].Controller {
		t.Errorf("Secret %s owned by %+v, want the cluster, without control", name, s.OwnerReferences)
	}
	return issued{leaf: leaf, resourceVersion: s.ResourceVersion}
}

// checkIssuance runs passes of a cluster whose TLS names no Secret: the
// first issues a CA and the certificates (secrets: name to the host it
// must be valid for), the next writes nothing, and one a month before
// the certificates expire issues them anew from the same CA.
func checkIssuance(t *testing.T, r reconcile.Reconciler, obj client.Object, clk *clocktesting.FakeClock, caSecret string, secrets map[string]string) {
	t.Helper()
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}); err != nil {
			t.Fatal(err)
		}
	}
	ns := obj.GetNamespace()
	pass()
	first := map[string]issued{}
	for name, host := range secrets {
		first[name] = readIssued(t, ns, name, caSecret, host, clk.Now())
	}
	ca := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: caSecret}, ca); err != nil {
		t.Fatal(err)
	}

	pass()
	for name, host := range secrets {
		if again := readIssued(t, ns, name, caSecret, host, clk.Now()); again.resourceVersion != first[name].resourceVersion {
			t.Errorf("Secret %s written again by a pass with nothing due", name)
		}
	}

	clk.Step(61 * 24 * time.Hour)
	pass()
	for name, host := range secrets {
		renewed := readIssued(t, ns, name, caSecret, host, clk.Now())
		if renewed.leaf.SerialNumber.Cmp(first[name].leaf.SerialNumber) == 0 || !renewed.leaf.NotAfter.After(first[name].leaf.NotAfter) {
			t.Errorf("Secret %s not issued anew 29 days before it expired", name)
		}
	}
	caNow := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: caSecret}, caNow); err != nil {
		t.Fatal(err)
	}
	if caNow.ResourceVersion != ca.ResourceVersion {
		t.Error("the CA Secret changed")
	}
}

// An EtcdCluster with TLS: {} gets its certificates from the operator: a
// CA of its own, the peer and server certificates for the members' names
// and the client Service's, and the operator's client certificate, all
// mounted or used as if the user had named them; renewed before they
// expire, the CA kept.
func TestEtcdClusterWithTLSAndNoSecretNamedIsIssuedItsCertificates(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", TLS: &etcdv1beta2.TLSPolicy{}}}
	testenv.Create(t, k8s, e)
	clk := clocktesting.NewFakeClock(time.Now())
	r := controller.NewEtcdReconcilerAt(k8s, (&etcd.Fake{}).Dial, clk)
	checkIssuance(t, r, e, clk, "e-tls-ca", map[string]string{
		"e-peer-tls":     "e-1.e." + ns + ".svc",
		"e-server-tls":   "e-client." + ns + ".svc",
		"e-operator-tls": "",
	})
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(e), sts); err != nil {
		t.Fatal(err)
	}
	var mounted []string
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = append(mounted, v.Secret.SecretName)
		}
	}
	slices.Sort(mounted)
	if !slices.Equal(mounted, []string{"e-peer-tls", "e-server-tls"}) {
		t.Errorf("the members mount Secrets %v, want the issued peer and server ones", mounted)
	}
}

// A RedisEnterpriseCluster with tls: {} gets its nodes' certificate from
// the operator, for the primary's Service and every node's name.
func TestRedisEnterpriseClusterWithTLSAndNoSecretNamedIsIssuedItsCertificate(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	rc := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{}}}
	testenv.Create(t, k8s, rc)
	clk := clocktesting.NewFakeClock(time.Now())
	r := controller.NewRedisReconciler(k8s, &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, clk, time.Minute)
	checkIssuance(t, r, rc, clk, "r-tls-ca", map[string]string{"r-tls": "r." + ns + ".svc"})
	readIssued(t, ns, "r-tls", "r-tls-ca", "r-1.r-nodes."+ns+".svc", clk.Now())
}

// A RedisEnterpriseCluster without spec.tls gets its console's
// certificate from the operator, for the `<name>-ui` Service's names,
// from a CA of the console's own, renewed before it expires; with tls:
// {}, the console serves the nodes' certificate, which names that Service
// too, and none is issued for it alone.
func TestRedisConsoleIsIssuedItsCertificate(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	rc := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}}
	testenv.Create(t, k8s, rc)
	clk := clocktesting.NewFakeClock(time.Now())
	r := controller.NewRedisReconciler(k8s, &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}, clk, time.Minute)
	checkIssuance(t, r, rc, clk, "r-ui-tls-ca", map[string]string{"r-ui-tls": "r-ui." + ns + ".svc"})
	readIssued(t, ns, "r-ui-tls", "r-ui-tls-ca", "r-ui", clk.Now())

	withTLS := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{}}}
	testenv.Create(t, k8s, withTLS)
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(withTLS)}); err != nil {
		t.Fatal(err)
	}
	readIssued(t, ns, "s-tls", "s-tls-ca", "s-ui."+ns+".svc", clk.Now())
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "s-ui-tls"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret s-ui-tls of a cluster with spec.tls: %v, want none", err)
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "s-ui"}, d); err != nil {
		t.Fatal(err)
	}
	var mounted []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = append(mounted, v.Secret.SecretName)
		}
	}
	if !slices.Equal(mounted, []string{"s-tls"}) {
		t.Errorf("the console mounts %v, want the nodes' s-tls", mounted)
	}
}
