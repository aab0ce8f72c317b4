package realpods

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// A RedisEnterpriseCluster with spec.tls, its Secret written as
// cert-manager writes it: it reaches Running (the replicas sync over TLS,
// the operator reaches every node with TLS); a plain client is refused;
// when the Secret is renewed while a client writes with WAIT 1, the
// operator has every node reload it, each node serves the new certificate
// without a restart, and no acknowledged write is lost; a backup then
// reads the dataset over TLS.
func TestRedisEnterpriseClusterWithTLSRefusesPlainClientsAndReloadsARenewedCertificate(t *testing.T) {
	c, ns := startBackupOperator(t)
	const name = "secure"
	writeTLSSecret(t, c, ns, name+"-tls", redisenterprisecluster.ServiceHost(name, ns))
	r := newRedisCellWith(t, c, ns, name, false, 3, fmt.Sprintf("  tls: {secretName: %s-tls}\n", name))
	cfg, err := testClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	r.tls = cfg
	r.checkRunningTakesWrites()

	// A plain client: refused before any command.
	plain := redisClient(r.podIP(r.rec.Status.Primary), "", r.password)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = plain.Ping(ctx).Err()
	cancel()
	plain.Close()
	if err == nil {
		t.Error("a plain client's PING was answered")
	}

	pods := r.podUIDs()
	restarts := redisRestarts(t, r)
	w := r.startWriter("tls")
	waitWrites(t, w, 50)
	renewed := time.Now()
	serial := writeTLSSecret(t, c, ns, name+"-tls", redisenterprisecluster.ServiceHost(name, ns))
	r.waitServing(mustTestClientTLS(t), serial, 5*time.Minute)
	toRenewed := time.Since(renewed)
	acked, lost := r.finish(w, "TLS: the certificate renewed while a client writes", toRenewed)
	r.checkNoneRestarted(pods, restarts, "the renewal")

	// A backup reads the dataset over TLS.
	bucket := "redis-" + ns
	objectStoreFor(t, c, ns, bucket)
	s3 := redisS3Storage(t, c, ns, bucket)
	r.setBackup(&redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}})
	info := r.waitBackupStatus(redisv1alpha1.BackupStatusSucceeded, 3*time.Minute)
	if !strings.HasPrefix(info.LastBackup, "s3://"+bucket+"/") || info.ReplicationOffset <= 0 {
		t.Errorf("backupInfo %+v, want a backup stored at an offset", info)
	}
	t.Logf("renewed: every node served the new certificate %s after the Secret changed; %d writes acknowledged, %d lost, longest %s without an acknowledged write; backup %s",
		toRenewed.Round(100*time.Millisecond), acked, lost, w.LongestGap().Round(100*time.Millisecond), info.LastBackup)
}

// waitServing waits until every node serves the certificate of serial to
// a client of cfg.
func (r *redisCluster) waitServing(cfg *tls.Config, serial *big.Int, timeout time.Duration) {
	r.t.Helper()
	testenv.EventuallyInNamespace(r.t, r.c, r.rec.Namespace, timeout, func() (bool, string) {
		var waiting []string
		for i := range int(r.rec.Spec.Nodes) {
			pod := redisenterprisecluster.PodName(r.rec.Name, i)
			got, err := servedSerialWith(cfg, r.podIP(pod), redisenterprisecluster.Port)
			if err != nil || got.Cmp(serial) != 0 {
				waiting = append(waiting, fmt.Sprintf("%s serves %v (%v)", pod, got, err))
			}
		}
		return len(waiting) == 0, fmt.Sprintf("want serial %v: %v", serial, waiting)
	})
}

// checkNoneRestarted fails the test if a node's pod was made again or its
// container restarted since pods and restarts were read: after what, a
// reload restarts no node.
func (r *redisCluster) checkNoneRestarted(pods map[string]types.UID, restarts map[string]int32, after string) {
	r.t.Helper()
	if got := r.podUIDs(); fmt.Sprint(got) != fmt.Sprint(pods) {
		r.t.Errorf("pods %v after %s, want %v: the nodes reload, none restarts", got, after, pods)
	}
	if got := redisRestarts(r.t, r); fmt.Sprint(got) != fmt.Sprint(restarts) {
		r.t.Errorf("container restarts %v after %s, want %v", got, after, restarts)
	}
}

// redisRestarts returns the restart count of each node's container.
func redisRestarts(t *testing.T, r *redisCluster) map[string]int32 {
	t.Helper()
	return containerRestarts(t, r.c, r.rec.Namespace, redisenterprisecluster.Selector(r.rec.Name), redisenterprisecluster.ContainerName)
}

// A running RedisEnterpriseCluster without TLS gets spec.tls while a
// client writes with WAIT 1, to whichever node is the primary, in the
// scheme its pod serves: the nodes roll to TLS, replicas first, the
// primary last after a handover, and the cluster is Running again with
// every node serving TLS alone. No acknowledged write is lost, and a
// plain client is refused by every node.
func TestRedisEnterpriseClusterGivenTLSWhileRunningRollsWithoutLosingAWrite(t *testing.T) {
	c, _, r := startCell(t, "moving", false)
	ns, name := r.rec.Namespace, r.rec.Name
	writeTLSSecret(t, c, ns, name+"-tls", redisenterprisecluster.ServiceHost(name, ns))
	cfg, err := testClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	// Set before the writer starts; the writer reaches each primary in
	// its pod's scheme.
	r.tls = cfg
	w := r.startWriter("moving")
	waitWrites(t, w, 50)

	moved := time.Now()
	patch := client.MergeFrom(r.rec.DeepCopy())
	r.rec.Spec.TLS = &redisv1alpha1.TLS{SecretName: name + "-tls"}
	if err := c.Patch(context.Background(), r.rec, patch); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyInNamespace(t, c, ns, 10*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(redisenterprisecluster.Selector(name))); err != nil {
			return false, err.Error()
		}
		var plain []string
		for i := range pods.Items {
			if !redisenterprisecluster.MountsTLS(&pods.Items[i]) || pods.Items[i].DeletionTimestamp != nil {
				plain = append(plain, pods.Items[i].Name)
			}
		}
		return len(pods.Items) == 3 && len(plain) == 0, fmt.Sprintf("%d pods, without the certificate: %v", len(pods.Items), plain)
	})
	r.waitRunning(5 * time.Minute)
	took := time.Since(moved)
	waitEventReasons(t, c, "RedisEnterpriseCluster", client.ObjectKeyFromObject(r.rec), "PrimaryHandedOver")
	acked, lost := r.finish(w, "TLS turned on for a running cluster while a client writes", took)
	for i := range int(r.rec.Spec.Nodes) {
		pod := redisenterprisecluster.PodName(name, i)
		plain := redisClient(r.podIP(pod), "", r.password)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := plain.Ping(ctx).Err()
		cancel()
		plain.Close()
		if err == nil {
			t.Errorf("a plain client's PING to %s was answered after the roll to TLS", pod)
		}
	}
	t.Logf("rolled to TLS: Running %s after spec.tls was set; %d writes acknowledged, %d lost, longest %s without an acknowledged write; last client error: %s",
		took.Round(100*time.Millisecond), acked, lost, w.LongestGap().Round(100*time.Millisecond), w.LastError())
}

// A RedisEnterpriseCluster with spec.tls whose Secret is replaced at once
// by a certificate of a new CA, with `ca.crt` the new CA alone (what a
// cert-manager CA Issuer writes once its CA has a new key), while a client
// writes with WAIT 1: the operator still reaches every node, each node
// ends serving the new CA's certificate without a restart, the cluster is
// Running again, a client that trusts the new CA alone reaches every
// node, and no acknowledged write is lost.
func TestRedisEnterpriseClusterGivenANewCAAtOnceMovesWithoutLosingAWrite(t *testing.T) {
	c, ns := startBackupOperator(t)
	const name = "newca"
	host := redisenterprisecluster.ServiceHost(name, ns)
	writeTLSSecret(t, c, ns, name+"-tls", host)
	r := newRedisCellWith(t, c, ns, name, false, 3, fmt.Sprintf("  tls: {secretName: %s-tls}\n", name))
	oldCA, err := testCA()
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("realpods-new-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The client presents no certificate (the nodes take a client without
	// one, by its password) and trusts both CAs: it writes throughout.
	r.tls = trustingTLS(oldCA, newCA)
	pods := r.podUIDs()
	restarts := redisRestarts(t, r)
	w := r.startWriter("newca")
	waitWrites(t, w, 50)

	pair, err := newCA.Issue(name+"-tls", []string{host}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	replaced := time.Now()
	writeSecret(t, c, ns, name+"-tls", pair.Data())
	newOnly := trustingTLS(newCA)
	r.waitServing(newOnly, pair.Serial, 6*time.Minute)
	moved := time.Since(replaced)
	r.waitRunning(3 * time.Minute)
	toReady := time.Since(replaced)
	acked, lost := r.finish(w, "TLS: the CA replaced at once (ca.crt the new CA alone) while a client writes", toReady)
	r.checkNoneRestarted(pods, restarts, "the new CA")
	// A client of the new CA alone, as one that reads ca.crt from the
	// Secret, reaches every node.
	r.tls = newOnly
	for _, n := range r.rec.Status.Nodes {
		rc := r.clientOfPod(n.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := rc.Ping(ctx).Err(); err != nil {
			t.Errorf("a client trusting the new CA alone: PING %s: %v", n.Name, err)
		}
		cancel()
		rc.Close()
	}
	t.Logf("new CA at once: every node served its certificate %s after the Secret changed, Running %s after; %d writes acknowledged, %d lost, longest %s without an acknowledged write",
		moved.Round(100*time.Millisecond), toReady.Round(100*time.Millisecond), acked, lost, w.LongestGap().Round(100*time.Millisecond))
}

// trustingTLS accepts a server whose certificate one of cas signed,
// whatever the name it was reached by, and presents no certificate.
func trustingTLS(cas ...*pki.CA) *tls.Config {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AppendCertsFromPEM(ca.PEM)
	}
	return &tls.Config{
		InsecureSkipVerify:    true, // the chain is checked by verifyChain, the name is not
		VerifyPeerCertificate: verifyChain(pool),
	}
}
