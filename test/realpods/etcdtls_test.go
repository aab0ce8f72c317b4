package realpods

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// startEtcdOperator starts, in a namespace of its own, an operator in the
// test's process that watches it alone, for a test that runs beside
// others.
func startEtcdOperator(t *testing.T) (client.Client, string) {
	t.Helper()
	return startOperatorIn(t, func(ns string) testenv.StartOptions { return testenv.StartOptions{Namespaces: []string{ns}} })
}

// startOperatorIn starts, for a test that runs beside others, an operator
// in the test's process with the options of a new namespace, and returns
// the namespace.
func startOperatorIn(t *testing.T, options func(ns string) testenv.StartOptions) (client.Client, string) {
	t.Helper()
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, options(ns))
	return c, ns
}

// etcdTLSSecrets writes, in namespace ns, the Secrets of a cluster called
// name with spec.TLS, in the layout cert-manager writes, each certificate
// newly issued by testCA (a renewal, when they exist), and returns the
// serials of the server and peer certificates.
func etcdTLSSecrets(t *testing.T, c client.Client, ns, name string) (server, peer *big.Int) {
	t.Helper()
	members := "*." + name + "." + ns + ".svc"
	serials := map[string]*big.Int{}
	for secret, hosts := range map[string][]string{
		name + "-server":   {members, etcdcluster.ClientServerName(name, ns), etcdcluster.ClientServiceName(name)},
		name + "-peer":     {members},
		name + "-operator": nil,
	} {
		serials[secret] = writeTLSSecret(t, c, ns, secret, hosts...)
	}
	return serials[name+"-server"], serials[name+"-peer"]
}

// etcdStaticTLS is the spec.TLS of a cluster called name whose Secrets
// etcdTLSSecrets writes.
func etcdStaticTLS(name string) *etcdv1beta2.TLSPolicy {
	return &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member:         &etcdv1beta2.MemberSecret{PeerSecret: name + "-peer", ServerSecret: name + "-server"},
		OperatorSecret: name + "-operator",
	}}
}

// createEtcdClusterWithTLS writes the Secrets of a cluster called name
// (etcdTLSSecrets) in namespace ns, and creates the cluster of the sample
// with spec.TLS naming them.
func createEtcdClusterWithTLS(t *testing.T, c client.Client, ns, name string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	etcdTLSSecrets(t, c, ns, name)
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name = name
	e.Spec.Version = etcdVersion
	e.Spec.TLS = etcdStaticTLS(name)
	if err := c.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// An EtcdCluster with spec.TLS, its Secrets written as cert-manager
// writes them: it reaches Ready (the members join over TLS, the operator
// reaches them with its own certificate); a client without a certificate,
// or without TLS, can neither read nor change the membership; etcd's
// metrics stay readable on the plain metrics port; and when every Secret
// is renewed while clients write and read the whole time, every member
// serves the new certificates on both ports without a restart, the status
// stays Ready, and the history is linearizable with every acknowledged
// write kept.
func TestEtcdClusterWithTLSRefusesClientsWithoutACertificateAndRenewsWithoutLosingAWrite(t *testing.T) {
	ctx := context.Background()
	c, ns := startEtcdOperator(t)
	const name = "secure"
	start := time.Now()
	e := createEtcdClusterWithTLS(t, c, ns, name)
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	t.Logf("Ready with TLS %s after creation", time.Since(start).Round(100*time.Millisecond))
	checkMembersServeMetrics(t, c, e)

	endpoints := etcdEndpoints(ctx, c, e)
	// Without a certificate, and without TLS: refused before any call.
	noCert, err := testClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	noCert = noCert.Clone()
	noCert.Certificates = nil
	plain := make([]string, len(endpoints))
	for i, ep := range endpoints {
		plain[i] = "http://" + ep[len("https://"):]
	}
	for what, cfg := range map[string]clientv3.Config{
		"a TLS client without a certificate": {Endpoints: endpoints, TLS: noCert},
		"a plain client":                     {Endpoints: plain},
	} {
		cfg.DialTimeout, cfg.Logger = 2*time.Second, zap.NewNop()
		cli, err := clientv3.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		list, listErr := cli.MemberList(rctx)
		_, addErr := cli.MemberAddAsLearner(rctx, []string{"https://intruder." + name + "." + ns + ".svc:2380"})
		_, putErr := cli.Put(rctx, "intruder", "x")
		cancel()
		cli.Close()
		if listErr == nil || addErr == nil || putErr == nil {
			t.Errorf("%s: member list %v (%v), member add %v, put %v: want every call refused", what, list, listErr, addErr, putErr)
		}
	}
	if resp, err := http.Get(plain[0] + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s/health over plain HTTP: %s, want a refusal", plain[0], resp.Status)
		}
	}

	h := startEtcdHistory(t, clientServiceURL(t, c, e), 2)
	leader := watchLeader(t, c, e)
	h.waitAcknowledged(t, writesBeforeFault)

	// Every Secret renewed at once, as cert-manager renews certificates
	// of the same issuer.
	renewed := time.Now()
	server, peer := etcdTLSSecrets(t, c, ns, name)
	pods := etcdPodUIDs(t, c, e)
	restarts := etcdRestarts(t, c, e)
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(etcdcluster.Selector(name))); err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, p := range list.Items {
			for port, want := range map[int]*big.Int{etcdcluster.ClientPort: server, etcdcluster.PeerPort: peer} {
				got, err := servedSerial(p.Status.PodIP, port)
				if err != nil || got.Cmp(want) != 0 {
					waiting = append(waiting, fmt.Sprintf("%s:%d serves %v (%v)", p.Name, port, got, err))
				}
			}
		}
		return len(waiting) == 0, fmt.Sprint(waiting)
	})
	toRenewed := time.Since(renewed)
	waitEtcdReady(t, c, e, 3, etcdVersion, 2*time.Minute)
	time.Sleep(3 * time.Second)
	leaderless := leader.Stop()
	h.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)
	checkMembersKept(t, c, e, "the certificates were renewed", etcdMemberIDs(e), pods, etcdClaimUIDs(t, c, e))
	if got := etcdRestarts(t, c, e); fmt.Sprint(got) != fmt.Sprint(restarts) {
		t.Errorf("container restarts %v after the renewal, want %v: none needed", got, restarts)
	}
	recordCell(faultCell{kind: "etcd", fault: "TLS: every certificate renewed while clients write",
		acked: h.acknowledged(), lost: h.lost, unavailable: leaderless, toReady: toRenewed})
	t.Logf("renewed: every member served the new certificates %s after the Secrets changed; %d writes acknowledged, %d lost, %s without a leader; client errors: %s",
		toRenewed.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond), h.failureSummary())
}

// A running EtcdCluster without TLS gets spec.TLS while clients write and
// read the whole time, some in plain HTTP and some in TLS, both through
// the client Service: every member moves to TLS, one restart at a time,
// and the cluster is Ready again with the same members on the same data.
// Then every member's peer and client URLs are https, a plain client is
// refused, and the history is linearizable with every acknowledged write
// kept and equal HashKV on every member.
func TestEtcdClusterGivenTLSWhileRunningMovesEveryMemberWithoutLosingAWrite(t *testing.T) {
	ctx := context.Background()
	c, ns := startEtcdOperator(t)
	const name = "moving"
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name = name
	e.Spec.Version = etcdVersion
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	ids, claims := etcdMemberIDs(e), etcdClaimUIDs(t, c, e)
	etcdTLSSecrets(t, c, ns, name)

	plainURL := clientServiceURL(t, c, e)
	h := startEtcdHistoryAt(t, []string{plainURL, "https" + strings.TrimPrefix(plainURL, "http")}, 4)
	leader := watchLeader(t, c, e.DeepCopy())
	// Acknowledged through the plain clients: the TLS ones get no answer
	// until the members serve TLS.
	h.waitAcknowledged(t, writesBeforeFault)

	moved := time.Now()
	patch := client.MergeFrom(e.DeepCopy())
	e.Spec.TLS = etcdStaticTLS(name)
	if err := c.Patch(ctx, e, patch); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyInNamespace(t, c, ns, 10*time.Minute, func() (bool, string) {
		// The pods of the members at https, once every one is.
		var secure []string
		for _, ep := range etcdEndpoints(ctx, c, e) {
			if strings.HasPrefix(ep, "https://") {
				secure = append(secure, ep)
			}
		}
		if len(secure) < 3 {
			return false, fmt.Sprintf("%d pods mount the certificates", len(secure))
		}
		cli, err := etcdClient(secure)
		if err != nil {
			return false, err.Error()
		}
		defer cli.Close()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		list, err := cli.MemberList(rctx)
		if err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, m := range list.Members {
			for _, u := range append(slices.Clone(m.PeerURLs), m.ClientURLs...) {
				if !strings.HasPrefix(u, "https://") {
					waiting = append(waiting, m.Name+" at "+u)
				}
			}
		}
		return len(list.Members) == 3 && len(waiting) == 0, fmt.Sprintf("members %d, not at https: %v", len(list.Members), waiting)
	})
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	took := time.Since(moved)
	waitEventReasons(t, c, "EtcdCluster", client.ObjectKeyFromObject(e), "PeerURLUpdated")
	time.Sleep(3 * time.Second)
	leaderless := leader.Stop()
	h.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after the move to TLS, want %v kept", got, ids)
	}
	if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, claims) {
		t.Errorf("claims %v after the move to TLS, want %v kept", got, claims)
	}
	for _, ep := range etcdEndpoints(ctx, c, e) {
		plain, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + strings.TrimPrefix(ep, "https://")}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = plain.Put(rctx, "plain", "x")
		cancel()
		plain.Close()
		if err == nil {
			t.Errorf("a plain client's put through %s was taken after the move to TLS", ep)
		}
	}
	recordCell(faultCell{kind: "etcd", fault: "TLS turned on for a running cluster while clients write",
		acked: h.acknowledged(), lost: h.lost, unavailable: leaderless, toReady: took})
	t.Logf("moved to TLS: Ready at https %s after spec.TLS was set; %d writes acknowledged, %d lost, %s without a leader; client errors: %s",
		took.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond), h.failureSummary())
}
