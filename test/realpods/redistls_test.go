package realpods

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
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
	writeTLSSecret(t, c, ns, name+"-tls", rec.ServiceHost(name, ns))
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
	serial := writeTLSSecret(t, c, ns, name+"-tls", rec.ServiceHost(name, ns))
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		var waiting []string
		for i := range int(r.rec.Spec.Nodes) {
			pod := rec.PodName(name, i)
			got, err := servedSerial(r.podIP(pod), rec.Port)
			if err != nil || got.Cmp(serial) != 0 {
				waiting = append(waiting, fmt.Sprintf("%s serves %v (%v)", pod, got, err))
			}
		}
		return len(waiting) == 0, fmt.Sprintf("want serial %v: %v", serial, waiting)
	})
	toRenewed := time.Since(renewed)
	acked, lost := r.finish(w, "TLS: the certificate renewed while a client writes", toRenewed)
	if got := r.podUIDs(); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v after the renewal, want %v: a reload restarts no node", got, pods)
	}
	if got := redisRestarts(t, r); fmt.Sprint(got) != fmt.Sprint(restarts) {
		t.Errorf("container restarts %v after the renewal, want %v", got, restarts)
	}

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
		toRenewed.Round(100*time.Millisecond), acked, lost, w.longestGap.Round(100*time.Millisecond), info.LastBackup)
}

// redisRestarts returns the restart count of each node's container.
func redisRestarts(t *testing.T, r *redisCluster) map[string]int32 {
	t.Helper()
	return containerRestarts(t, r.c, r.rec.Namespace, rec.Selector(r.rec.Name), rec.ContainerName)
}
