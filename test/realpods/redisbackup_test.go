package realpods

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/app-operator/app-operator/api/conditions"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/test/testenv"
	"github.com/app-operator/app-operator/test/workload"
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
// the primary; what it holds is the state after a prefix of the client's
// ops (no op missing before the newest it holds, on any key), a prefix
// that holds every op acknowledged before the backup started; the cluster
// backed up keeps its pods and stays Running.
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
	h := w.Stop()
	if info.LastBackupTime == nil || info.ReplicationOffset <= 0 || !strings.HasPrefix(info.LastBackup, "s3://"+s3.BucketName+"/redis/prod/source_") {
		t.Fatalf("backupInfo %+v, want where the backup is, when it was taken and its offset", info)
	}
	key := strings.TrimPrefix(info.LastBackup, "s3://"+s3.BucketName+"/")
	obj, err := mc.StatObject(ctx, s3.BucketName, key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the backup %s is not in the store: %v", info.LastBackup, err)
	}
	source.checkRunningTakesWrites()
	// With a backup taken and writes served, every metric the Redis
	// dashboard names is in a scrape of the operator.
	checkDashboardMetrics(t, "redis-clusters.json", source.rec.Namespace)
	if got := source.podUIDs(); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods %v of the cluster backed up, want %v: a backup restarts no node", got, pods)
	}

	restoreStart := time.Now()
	r, primary := source.restoreInto("restored", path.Base(key), s3)
	toRunning := time.Since(restoreStart)
	if primary != "restored-0" {
		t.Fatalf("primary %s of the restored cluster, want restored-0, the node that holds the backup", primary)
	}
	prefix, before := checkRestoredPrefix(t, r, primary, h, info.LastScheduleTime.Time, ackedBefore)
	r.checkRunningTakesWrites()
	t.Logf("backup Succeeded %s after spec.backup was set, %d bytes at offset %d; restored cluster Running %s after it was created; it holds the state after the first %d of %d ops (%d acknowledged), which hold all %d acknowledged before the backup started",
		took.Round(100*time.Millisecond), obj.Size, info.ReplicationOffset, toRunning.Round(100*time.Millisecond), prefix, len(h.Ops), h.Acked(), before)
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
	waitEventReasons(r.t, r.c, "RedisEnterpriseCluster", client.ObjectKeyFromObject(restored), redisv1alpha1.EventRestored)
	return out, primary
}

// writesBeforeBackup waits until w has n more writes acknowledged, then
// until the wall clock enters a new second, and returns how many writes
// were acknowledged by then. A backup's start (status.backupInfo's
// lastScheduleTime) is kept in whole seconds: a backup started in the
// second of the last acknowledgement would look as if it began before
// it. Started after this returns, the backup starts after every one of
// them, whatever the machine's load.
func writesBeforeBackup(t *testing.T, w *workload.Register, n int) int {
	t.Helper()
	waitWrites(t, w, n)
	acked := w.Acked()
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
	return acked
}

// checkRestoredPrefix reads the workload's keys back from node, which
// holds a restored backup, a copy of one moment of the dataset: on every
// key at once, it must be the state after some prefix of the history (the
// ops were sent one after the other), a prefix that holds every op
// acknowledged before scheduled (both replicas had it before the backup
// began), at least wantBefore of them (the ops the test made sure of
// before it started the backup). It returns the longest such prefix, and
// how many ops were acknowledged before scheduled.
func checkRestoredPrefix(t *testing.T, r *redisCluster, node string, h workload.History, scheduled time.Time, wantBefore int) (prefix, before int) {
	t.Helper()
	cli := r.client(r.podIP(node))
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	restored, err := workload.Read(ctx, cli, h.Keys)
	if err != nil {
		t.Fatal(err)
	}
	need, before := h.AckedBefore(scheduled)
	if before < wantBefore {
		t.Errorf("%d ops acknowledged before the backup started at %s; at least %d were acknowledged before the test started it", before, scheduled.Format(time.RFC3339), wantBefore)
	}
	rep := workload.CheckSnapshot(h, restored, need)
	if !rep.OK() {
		t.Errorf("the restored cluster is not the state after a prefix of the %d ops that holds the first %d (every op acknowledged before the backup started at %s): %s",
			len(h.Ops), need, scheduled.Format(time.RFC3339), rep.Why)
	}
	if len(rep.Unchecked) > 0 {
		t.Errorf("keys not checked (too many values possible): %v", rep.Unchecked)
	}
	return rep.Last, before
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
	waitEventReasons(t, r.c, "RedisEnterpriseCluster", client.ObjectKeyFromObject(r.rec), conditions.EventBackupStarted, conditions.EventBackupFailed)
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
// restores as the state after a prefix of the client's ops that holds
// every op acknowledged (by both replicas) before it started, or Failed
// with a reason; either way the cluster fails over with no acknowledged
// write lost and ends Running.
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
	h := w.History()
	prefix, before := checkRestoredPrefix(t, r, restoredPrimary, h, info.LastScheduleTime.Time, ackedBefore)
	t.Logf("the backup completed during the failover (%s); restored, it holds the state after the first %d of %d ops, which hold all %d acknowledged before it started; %d writes acknowledged, %d lost",
		info.LastBackup, prefix, len(h.Ops), before, acked, lost)
}
