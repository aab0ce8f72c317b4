package realpods

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/testenv"
)

// startRedisBackupSource starts an operator that runs the snapshot tool
// of the operator's image, a running cluster of three called name, and a
// bucket of the object store with a Secret of its credentials in the
// Redis Enterprise database's layout.
func startRedisBackupSource(t *testing.T, name string) (client.Client, *redisCluster, *minio.Client, redisv1alpha1.S3Storage) {
	t.Helper()
	c, ns := startBackupOperator(t)
	r := newRedisCell(t, c, ns, name, false, 3)

	bucket := "redis-" + ns
	mc, _ := objectStoreFor(t, c, ns, bucket)
	return c, r, mc, redisS3Storage(t, c, ns, bucket)
}

// redisS3Storage is the S3 storage of bucket in the object store, with a
// Secret of its credentials in namespace ns in the Redis Enterprise
// database's layout.
func redisS3Storage(t *testing.T, c client.Client, ns, bucket string) redisv1alpha1.S3Storage {
	t.Helper()
	store, _ := testCluster.ObjectStore()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-backup-credentials"},
		StringData: map[string]string{redisv1alpha1.AWSAccessKeyIDKey: store.AccessKey, redisv1alpha1.AWSSecretAccessKeyKey: store.SecretKey}}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return redisv1alpha1.S3Storage{AWSSecretName: secret.Name, BucketName: bucket, Subdir: "redis/prod", Endpoint: store.Endpoint, ForcePathStyle: true}
}

// startBackupOperator starts, in a namespace of its own, an operator
// whose backups run the snapshot tools of the operator's image, and
// returns the namespace.
func startBackupOperator(t *testing.T) (client.Client, string) {
	t.Helper()
	return startOperatorIn(t, func(ns string) testenv.StartOptions {
		opts := cellOperatorOptions(ns)
		opts.SnapshotImage = operatorImage(t)
		return opts
	})
}

// setBackup sets the cluster's spec.backup.
func (r *redisCluster) setBackup(b *redisv1alpha1.Backup) {
	r.t.Helper()
	r.refresh()
	patch := client.MergeFrom(r.rec.DeepCopy())
	r.rec.Spec.Backup = b
	if err := r.c.Patch(context.Background(), r.rec, patch); err != nil {
		r.t.Fatal(err)
	}
}

// waitBackupStatus waits for status.backupInfo.backupStatus to be want
// and returns the backup info.
func (r *redisCluster) waitBackupStatus(want string, timeout time.Duration) *redisv1alpha1.BackupInfo {
	r.t.Helper()
	testenv.EventuallyInNamespace(r.t, r.c, r.rec.Namespace, timeout, func() (bool, string) {
		r.refresh()
		info := r.rec.Status.BackupInfo
		return info != nil && info.BackupStatus == want, fmt.Sprintf("backupInfo %+v", info)
	})
	return r.rec.Status.BackupInfo
}

// podUIDs maps the cluster's pods to their uids.
func (r *redisCluster) podUIDs() map[string]types.UID {
	uids := map[string]types.UID{}
	for _, n := range r.rec.Status.Nodes {
		uids[n.Name] = r.podUID(n.Name)
	}
	return uids
}

// A backup to the object store, taken while a client writes (each write
// acknowledged once both replicas hold it), restored into a new cluster:
// the restored cluster's first node, which alone holds data, is elected
// the primary; it holds every write acknowledged before the backup
// started, and what it holds of the writes is a prefix of them (no write
// missing before the newest it holds); the cluster backed up keeps its
// pods and stays Running.
func TestRedisBackupToS3ThenRestoreHoldsEveryWriteAcknowledgedBeforeIt(t *testing.T) {
	ctx := context.Background()
	_, source, mc, s3 := startRedisBackupSource(t, "source")
	pods := source.podUIDs()
	w := source.startWriterWaiting("k", 2, cellWritePause)
	ackedBefore := writesBeforeBackup(t, w, 200)
	start := time.Now()
	source.setBackup(&redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}})
	info := source.waitBackupStatus(redisv1alpha1.BackupStatusSucceeded, 3*time.Minute)
	took := time.Since(start)
	waitWrites(t, w, 50)
	acked := w.Stop()
	w.mu.Lock()
	ackedAt := w.ackedAt
	w.mu.Unlock()
	if info.LastBackupTime == nil || info.ReplicationOffset <= 0 || !strings.HasPrefix(info.LastBackup, "s3://"+s3.BucketName+"/redis/prod/source_") {
		t.Fatalf("backupInfo %+v, want where the backup is, when it was taken and its offset", info)
	}
	key := strings.TrimPrefix(info.LastBackup, "s3://"+s3.BucketName+"/")
	obj, err := mc.StatObject(ctx, s3.BucketName, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the backup %s is not in the store: %v", info.LastBackup, err)
	}
	source.checkRunningTakesWrites()
	if got := source.podUIDs(); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v of the cluster backed up, want %v: a backup restarts no node", got, pods)
	}

	restoreStart := time.Now()
	r, primary := source.restoreInto("restored", path.Base(key), s3)
	toRunning := time.Since(restoreStart)
	if primary != "restored-0" {
		t.Fatalf("primary %s of the restored cluster, want restored-0, the node that holds the backup", primary)
	}
	held, before := checkRestoredPrefix(t, r, primary, acked, ackedAt, info.LastScheduleTime.Time, ackedBefore)
	r.checkRunningTakesWrites()
	t.Logf("backup Succeeded %s after spec.backup was set, %d bytes at offset %d; restored cluster Running %s after it was created; it holds %d of %d acknowledged writes, with no gap, and all %d acknowledged before the backup started",
		took.Round(100*time.Millisecond), obj.Size, info.ReplicationOffset, toRunning.Round(100*time.Millisecond), held, len(acked), before)
}

// restoreInto creates a cluster of three called name, like r, from the
// backup in s3, waits for it to run and for its Restored event, and
// returns it with its primary.
func (r *redisCluster) restoreInto(name, backup string, s3 redisv1alpha1.S3Storage) (*redisCluster, string) {
	r.t.Helper()
	restored := &redisv1alpha1.RedisEnterpriseCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.rec.Namespace, Name: name},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, RedisEnterpriseNodeResources: r.rec.Spec.RedisEnterpriseNodeResources,
			Restore: &redisv1alpha1.RestoreSource{Backup: backup, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}}},
	}
	if err := r.c.Create(context.Background(), restored); err != nil {
		r.t.Fatal(err)
	}
	out := &redisCluster{t: r.t, c: r.c, rec: restored}
	primary := out.waitRunning(redisReadyTimeout)
	out.readPassword()
	waitEventReasons(r.t, r.c, "RedisEnterpriseCluster", client.ObjectKeyFromObject(restored), controller.EventRestored)
	return out, primary
}

// writesBeforeBackup waits until w has n more writes acknowledged, then
// until the wall clock enters a new second, and returns how many writes
// were acknowledged by then. A backup's start (status.backupInfo's
// lastScheduleTime) is kept in whole seconds: a backup started in the
// second of the last acknowledgement would look as if it began before
// it. Started after this returns, the backup starts after every one of
// them, whatever the machine's load.
func writesBeforeBackup(t *testing.T, w *writer, n int) int {
	t.Helper()
	waitWrites(t, w, n)
	acked := w.ackedCount()
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
	return acked
}

// checkRestoredPrefix reads every acknowledged write back from node: it
// must hold every write acknowledged before scheduled (both replicas had
// it before the backup began), at least wantBefore of them (the writes
// the test made sure of before it started the backup), and no write it
// lacks may come before one it holds (the writes were sent one after the
// other). It returns how many it holds, and how many were acknowledged
// before scheduled.
func checkRestoredPrefix(t *testing.T, r *redisCluster, node string, acked []string, ackedAt []time.Time, scheduled time.Time, wantBefore int) (held, before int) {
	t.Helper()
	cli := r.client(r.podIP(node))
	defer cli.Close()
	firstMissing := -1
	for i, k := range acked {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := cli.Get(ctx, k).Result()
		cancel()
		switch {
		case errors.Is(err, redis.Nil):
			if firstMissing < 0 {
				firstMissing = i
			}
		case err != nil:
			t.Fatal(err)
		case v != k:
			t.Fatalf("%s holds %q, want %q", k, v, k)
		default:
			held++
			if firstMissing >= 0 {
				t.Errorf("the restored cluster holds %s but not %s, acknowledged before it", k, acked[firstMissing])
			}
		}
		if ackedAt[i].Before(scheduled) {
			before++
			if firstMissing == i {
				t.Errorf("the restored cluster lacks %s, acknowledged by both replicas at %s, before the backup started at %s",
					k, ackedAt[i].Format(time.RFC3339Nano), scheduled.Format(time.RFC3339))
			}
		}
	}
	if before < wantBefore || held < before {
		t.Errorf("%d writes acknowledged before the backup started (at least %d were acknowledged before the test started it), %d restored", before, wantBefore, held)
	}
	return held, before
}

// A backup to a bucket that does not exist fails with the reason in
// status.backupInfo and an event, and the cluster stays Running.
func TestRedisBackupThatCannotBeWrittenSaysWhyAndLeavesTheClusterRunning(t *testing.T) {
	_, r, _, s3 := startRedisBackupSource(t, "kept")
	pods := r.podUIDs()
	s3.BucketName = "no-such-bucket-" + r.rec.Namespace
	r.setBackup(&redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}})
	info := r.waitBackupStatus(redisv1alpha1.BackupStatusFailed, 3*time.Minute)
	if !strings.HasPrefix(info.BackupFailureReason, "BucketNotFound: ") {
		t.Errorf("backupFailureReason %q, want BucketNotFound", info.BackupFailureReason)
	}
	waitEventReasons(t, r.c, "RedisEnterpriseCluster", client.ObjectKeyFromObject(r.rec), controller.EventBackupStarted, controller.EventBackupFailed)
	r.waitRunning(time.Minute)
	r.checkRunningTakesWrites()
	if got := r.podUIDs(); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v, want %v: a failed backup restarts no node", got, pods)
	}
	t.Logf("failed backup: %s", info.BackupFailureReason)
}

// A backup taken while the primary fails over: the primary's pod is
// deleted as soon as the backup's Job is created. The backup ends, the
// Job retrying what may pass, either Succeeded, and its dataset then
// restores with every write acknowledged (by both replicas) before it
// started and no gap, or Failed with a reason; either way the cluster
// fails over with no acknowledged write lost and ends Running.
func TestRedisBackupDuringAFailoverIsCompleteOrReportedFailed(t *testing.T) {
	ctx := context.Background()
	c, source, _, s3 := startRedisBackupSource(t, "failover")
	ns, primary := source.rec.Namespace, source.rec.Status.Primary
	w := source.startWriterWaiting("f", 2, cellWritePause)
	ackedBefore := writesBeforeBackup(t, w, 200)
	source.setBackup(&redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{S3: &s3}})
	source.waitBackupStatus(redisv1alpha1.BackupStatusRunning, 2*time.Minute)
	deleted := time.Now()
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
		t.Fatal(err)
	}
	var info *redisv1alpha1.BackupInfo
	testenv.EventuallyInNamespace(t, c, ns, 3*time.Minute, func() (bool, string) {
		source.refresh()
		info = source.rec.Status.BackupInfo
		return info != nil && (info.BackupStatus == redisv1alpha1.BackupStatusSucceeded || info.BackupStatus == redisv1alpha1.BackupStatusFailed),
			fmt.Sprintf("backupInfo %+v", info)
	})
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		source.refresh()
		return source.rec.Status.Primary != primary, "the primary is still " + primary
	})
	source.waitRunning(3 * time.Minute)
	toReady := time.Since(deleted)
	acked, lost := source.finish(w, "a backup running while the primary's pod is deleted (persistence off)", toReady)
	if info.BackupStatus == redisv1alpha1.BackupStatusFailed {
		if info.BackupFailureReason == "" {
			t.Fatalf("backupInfo %+v: a failed backup without a reason", info)
		}
		t.Logf("the backup failed during the failover: %s; %d writes acknowledged, %d lost", info.BackupFailureReason, acked, lost)
		return
	}
	r, restoredPrimary := source.restoreInto("restored", path.Base(info.LastBackup), s3)
	held, before := checkRestoredPrefix(t, r, restoredPrimary, w.acked, w.ackedAt, info.LastScheduleTime.Time, ackedBefore)
	t.Logf("the backup completed during the failover (%s); restored, it holds %d acknowledged writes with no gap, all %d acknowledged before it started; %d writes acknowledged, %d lost",
		info.LastBackup, held, before, acked, lost)
}
