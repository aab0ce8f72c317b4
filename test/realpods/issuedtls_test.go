package realpods

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// issuedTLS is the client configuration of the certificate in Secret name,
// one the operator issued, checking only the chain to its ca.crt.
func issuedTLS(t *testing.T, c client.Client, ns, name string) *tls.Config {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	cfg, err := chainOnlyTLS(pki.Pair{Cert: s.Data[tlssecret.CertKey], Key: s.Data[tlssecret.KeyKey], CA: s.Data[tlssecret.CAKey]})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// An EtcdCluster with TLS: {} names no Secret: the operator issues its
// certificates, the members join over TLS with them and the cluster is
// Ready; a client with the operator's issued certificate writes and reads,
// one with a certificate of another CA is refused.
func TestEtcdClusterWithTLSIssuedByTheOperatorServesOnlyItsCertificates(t *testing.T) {
	ctx := context.Background()
	c, ns := startEtcdOperator(t)
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name, e.Spec.Version, e.Spec.TLS = "issued", etcdVersion, &etcdv1beta2.TLSPolicy{}
	start := time.Now()
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	toReady := time.Since(start)
	_, _, operator := e.Spec.TLSSecrets(e.Name)
	endpoints := etcdEndpoints(ctx, c, e)
	for what, cfg := range map[string]*tls.Config{"the issued certificate": issuedTLS(t, c, ns, operator), "a certificate of another CA": mustTestClientTLS(t)} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: cfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, putErr := cli.Put(rctx, "issued", "yes")
		cancel()
		cli.Close()
		if wantOK := what == "the issued certificate"; (putErr == nil) != wantOK {
			t.Errorf("a put with %s: %v", what, putErr)
		}
	}
	checkMembersServeMetrics(t, c, e)
	t.Logf("Ready with the operator's certificates %s after creation", toReady.Round(100*time.Millisecond))
}

// A RedisEnterpriseCluster with tls: {} names no Secret: the operator
// issues the nodes' certificate, the replicas sync over TLS with it and
// the cluster runs; a client that trusts the issued CA writes to every
// replica.
func TestRedisEnterpriseClusterWithTLSIssuedByTheOperatorRuns(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	start := time.Now()
	r := newRedisCellWith(t, c, ns, "issued", false, 3, "  tls: {}\n")
	toRunning := time.Since(start)
	r.tls = issuedTLS(t, c, ns, redisenterprisecluster.TLSSecretName("issued", r.rec.Spec.TLS))
	r.checkRunningTakesWrites()
	if got, err := servedSerialWith(r.tls, r.podIP(r.rec.Status.Primary), redisenterprisecluster.Port); err != nil || got == nil {
		t.Errorf("the primary's certificate: %v, %v", got, err)
	}
	t.Logf("Running with the operator's certificate %s after creation", toRunning.Round(100*time.Millisecond))
}

func mustTestClientTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := testClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
