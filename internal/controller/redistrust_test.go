package controller_test

import (
	"context"
	"crypto/x509"
	"path"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// secureFixture is a redisFixture whose fake Redis is reached as Redis
// is: with the cluster's password and, with spec.tls, with TLS, each node
// serving and trusting what it loaded (controller.FakeSecureRedis). The
// files the kubelet would write into every pod are the Secret's and the
// ConfigMap's as the API server has them.
type secureFixture struct {
	*redisFixture
	secure *controller.FakeSecureRedis
}

// newSecureFixture makes the cluster "r" of spec, calling before (which
// writes a TLS Secret the spec names, say) in its namespace first; its
// three pods exist, ready (mounting the certificate with spec.tls), r-0
// recorded as the primary, and each node of TLS serves and trusts the
// Secret's certificate and CAs, as from redis.conf.
func newSecureFixture(t *testing.T, spec redisv1alpha1.RedisEnterpriseClusterSpec, nodes map[int]*controller.FakeRedisNode, before func(ns string)) *secureFixture {
	t.Helper()
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	if before != nil {
		before(ns)
	}
	fake := &controller.FakeRedis{Nodes: map[string]*controller.FakeRedisNode{}}
	for i, n := range nodes {
		fake.Nodes[nodeAddr(i)] = n
	}
	secure := &controller.FakeSecureRedis{FakeRedis: fake, TLS: map[string]*controller.FakeTLSNode{}}
	f := &secureFixture{redisFixture: &redisFixture{t: t, redis: fake, clock: clocktesting.NewFakeClock(time.Now())}, secure: secure}
	secure.Files = f.files
	f.r = controller.NewRedisReconcilerReaching(k8s, secure.Reach, f.clock, failoverWindow)
	f.obj = &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: spec}
	testenv.Create(t, k8s, f.obj)
	_ = f.pass()
	secure.Password = string(f.secret("r").Data[redisenterprisecluster.SecretPassword])
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	for i := range 3 {
		role := redisv1alpha1.RoleReplica
		if i == 0 {
			role = redisv1alpha1.RolePrimary
		}
		labels := redisenterprisecluster.Selector("r")
		labels[redisenterprisecluster.RoleLabel] = role
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: redisenterprisecluster.PodName("r", i), Labels: labels},
			Spec:       corev1.PodSpec{NodeName: nodeOf(ns, i), Containers: []corev1.Container{{Name: "redis", Image: "redis"}}},
		}
		if spec.TLS != nil {
			pod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: redisenterprisecluster.TLSSecretName("r", spec.TLS)}}}}
			s := f.secret(redisenterprisecluster.TLSSecretName("r", spec.TLS))
			secure.TLS[nodeAddr(i)] = &controller.FakeTLSNode{Serves: leafOf(t, s), Trusts: casOf(t, s.Data[tlssecret.CAKey]),
				CAFile: redisenterprisecluster.TLSDir + "/" + tlssecret.CAKey}
		}
		testenv.Create(t, k8s, pod)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP(i), PodIPs: []corev1.PodIP{{IP: podIP(i)}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	get(t, f.obj)
	f.obj.Status.Primary = "r-0"
	if err := k8s.Status().Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	return f
}

// runningNodes are a primary r-0 and two replicas in sync with it.
func runningNodes() map[int]*controller.FakeRedisNode {
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 100,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0}}}
	return map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)}
}

// primaryDown makes r-0 silent and its replicas hear nothing from it.
func (f *secureFixture) primaryDown() {
	f.redis.Update(nodeAddr(0), func(n *controller.FakeRedisNode) { n.Silent = true })
	for _, i := range []int{1, 2} {
		f.redis.Update(nodeAddr(i), func(n *controller.FakeRedisNode) { n.Info.LinkUp, n.Info.LastIO = false, -1 })
	}
}

// secret reads the Secret name of the fixture's namespace.
func (f *secureFixture) secret(name string) *corev1.Secret {
	f.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: name}}
	get(f.t, s)
	return s
}

// files is what the kubelet writes into every node's pod: the TLS
// Secret's keys under the TLS folder, the ConfigMap's trust bundles beside
// redis.conf.
func (f *secureFixture) files(p string) ([]byte, bool) {
	ctx, dir, base := context.Background(), path.Dir(p), path.Base(p)
	switch {
	case dir == redisenterprisecluster.TLSDir:
		s := &corev1.Secret{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: f.obj.Namespace, Name: redisenterprisecluster.TLSSecretName("r", f.obj.Spec.TLS)}, s) != nil {
			return nil, false
		}
		v, ok := s.Data[base]
		return v, ok
	case redisenterprisecluster.IsTrustKey(base):
		cm := &corev1.ConfigMap{}
		if k8s.Get(ctx, client.ObjectKey{Namespace: f.obj.Namespace, Name: redisenterprisecluster.ConfigMapName("r")}, cm) != nil {
			return nil, false
		}
		v, ok := cm.Data[base]
		return []byte(v), ok && p == path.Join(path.Dir(redisenterprisecluster.TrustPath(nil)), base)
	}
	return nil, false
}

// trustKeys are the trust bundles of the cluster's ConfigMap.
func (f *secureFixture) trustKeys() []string {
	f.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.ConfigMapName("r")}}
	get(f.t, cm)
	var keys []string
	for k := range cm.Data {
		if redisenterprisecluster.IsTrustKey(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	leaf, err := tlssecret.Leaf(s.Data)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func casOf(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	cas, err := tlssecret.CAs(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return cas
}

func testCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// writeTLSSecret writes the Secret r-tls of ns with a certificate of ca
// for the primary's Service and, as ca.crt, the CAs trusted (ca alone
// when none), as cert-manager writes it; it returns the certificate.
func writeTLSSecret(t *testing.T, ns string, ca *pki.CA, trusted ...*pki.CA) *x509.Certificate {
	t.Helper()
	pair, err := ca.Issue("r", []string{redisenterprisecluster.ServiceHost("r", ns)}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data := pair.Data()
	if len(trusted) > 0 {
		data[tlssecret.CAKey] = nil
		for _, c := range trusted {
			data[tlssecret.CAKey] = append(data[tlssecret.CAKey], c.PEM...)
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r-tls"}}
	switch err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s); {
	case apierrors.IsNotFound(err):
		s.Data = data
		testenv.Create(t, k8s, s)
	case err != nil:
		t.Fatal(err)
	default:
		s.Data = data
		if err := k8s.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	leaf, err := tlssecret.Leaf(data)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// The Secret of spec.tls replaced by a certificate of a new CA, with the
// new CA alone in ca.crt (what a cert-manager CA Issuer writes once its
// CA has a new key), while every node still serves the old CA's: the
// operator trusts both CAs, so it still reaches every node (no failover),
// and has each reload its files, with both CAs to trust while they move
// (a node that loaded the new CA alone would refuse a replica still
// presenting the old CA's certificate). Once every node serves the new
// certificate, the old CA is trusted no more, by the operator or the
// nodes, and the cluster is Running throughout.
func TestRedisTLSSecretOfANewCAStillReachesTheNodesAndReloadsThem(t *testing.T) {
	oldCA, newCA := testCA(t, "redis-ca"), testCA(t, "redis-ca")
	f := newSecureFixture(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "r-tls"}}, runningNodes(),
		func(ns string) { writeTLSSecret(t, ns, oldCA) })
	f.run()
	oldCert, newCert := casOf(t, oldCA.PEM)[0], casOf(t, newCA.PEM)[0]
	if keys := f.trustKeys(); !slices.Equal(keys, []string{redisenterprisecluster.TrustKey(oldCA.PEM)}) {
		t.Fatalf("trust bundles %v, want the old CA's alone", keys)
	}

	leaf := writeTLSSecret(t, f.obj.Namespace, newCA)
	f.mustPass()
	if f.obj.Status.Primary != "r-0" || len(f.redis.CallsMatching("promote")) > 0 || f.readyReason() != conditions.ReasonAvailable {
		t.Fatalf("after the Secret moved to a new CA: primary %s, calls %v, %s; want r-0 reached and Running",
			f.obj.Status.Primary, f.redis.Calls, f.readyMessage())
	}
	for i := range 3 {
		n := f.secure.Node(nodeAddr(i))
		if !n.Serves.Equal(leaf) || !tlssecret.HasCA(n.Trusts, oldCert) || !tlssecret.HasCA(n.Trusts, newCert) {
			t.Errorf("r-%d during the move: serves the new certificate %v, trusts the old CA %v and the new %v; want all three",
				i, n.Serves.Equal(leaf), tlssecret.HasCA(n.Trusts, oldCert), tlssecret.HasCA(n.Trusts, newCert))
		}
	}

	f.mustPass()
	wantFile := redisenterprisecluster.TrustPath(newCA.PEM)
	for i := range 3 {
		n := f.secure.Node(nodeAddr(i))
		if n.CAFile != wantFile || tlssecret.HasCA(n.Trusts, oldCert) {
			t.Errorf("r-%d once every node moved: CAs from %s, the old CA trusted %v; want %s, no", i, n.CAFile, tlssecret.HasCA(n.Trusts, oldCert), wantFile)
		}
	}
	if keys := f.trustKeys(); !slices.Equal(keys, []string{redisenterprisecluster.TrustKey(newCA.PEM)}) {
		t.Errorf("trust bundles %v once every node moved, want the new CA's alone", keys)
	}
	if f.obj.Status.State != redisv1alpha1.StateRunning || len(f.redis.CallsMatching("follow")) > 0 {
		t.Errorf("state %s, calls %v; want Running, no node repointed", f.obj.Status.State, f.redis.Calls)
	}
}

// A renewed certificate is reloaded whether or not the cluster converged:
// with the primary down and its failover pending, the replicas that
// answer load the Secret's new certificate.
func TestRedisCertificateRenewedWhileAFailoverIsPendingIsReloadedByTheNodesThatAnswer(t *testing.T) {
	ca := testCA(t, "redis-ca")
	f := newSecureFixture(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "r-tls"}}, runningNodes(),
		func(ns string) { writeTLSSecret(t, ns, ca) })
	f.run()
	f.primaryDown()
	f.mustPass()
	f.clock.Step(time.Second)
	f.mustPass()
	if f.readyReason() != redisv1alpha1.ReasonFailoverPending {
		t.Fatalf("%s, want %s", f.readyMessage(), redisv1alpha1.ReasonFailoverPending)
	}
	leaf := writeTLSSecret(t, f.obj.Namespace, ca)
	f.mustPass()
	if f.readyReason() != redisv1alpha1.ReasonFailoverPending {
		t.Errorf("%s, want %s", f.readyMessage(), redisv1alpha1.ReasonFailoverPending)
	}
	for _, i := range []int{1, 2} {
		if n := f.secure.Node(nodeAddr(i)); !n.Serves.Equal(leaf) {
			t.Errorf("r-%d serves serial %v, want the renewed certificate's %v", i, n.Serves.SerialNumber, leaf.SerialNumber)
		}
	}
}
