package realpods

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestEtcdRestoreFromAPrefixTakesTheClusterMadeAgain backs a cluster up to
// a prefix, deletes it and makes it again under the same name (a new etcd
// cluster, whose revisions start again low), backs the new one up to the
// same prefix, and restores from the prefix: the restored cluster holds the
// new cluster's data, and the restore names a snapshot of its cluster ID.
func TestEtcdRestoreFromAPrefixTakesTheClusterMadeAgain(t *testing.T) {
	c, ns, first := startBackupSource(t)
	ctx := context.Background()
	_, s3 := objectStoreFor(t, c, ns, "backups-"+ns)
	loc := etcdv1beta2.BackupLocation{S3: &s3}

	// The first cluster writes more, so its revisions stay above the next's.
	putEach(t, etcdClientOf(t, c, first), map[string]string{"incarnation": "first"}, 50)
	old := backupOnce(t, c, first, "first", loc)

	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitEtcdGone(t, c, first)
	made := createEtcdSample(t, c, ns, first.Name, etcdVersion)
	if err := c.Get(ctx, client.ObjectKeyFromObject(made), made); err != nil {
		t.Fatal(err)
	}
	if made.Status.ClusterID == "" || strings.Contains(old.Status.LastBackup, "_c"+made.Status.ClusterID+"_") {
		t.Fatalf("the cluster made again has cluster ID %q; the first one's backup is %s: want a new ID", made.Status.ClusterID, old.Status.LastBackup)
	}
	putEach(t, etcdClientOf(t, c, made), map[string]string{"incarnation": "second"}, 0)
	second := backupOnce(t, c, made, "second", loc)
	if second.Status.EtcdRevision >= old.Status.EtcdRevision {
		t.Fatalf("the new cluster's backup is at revision %d, the first one's at %d: the test needs it lower", second.Status.EtcdRevision, old.Status.EtcdRevision)
	}

	// The prefix both clusters backed up to.
	r := restoreAs(t, c, ns, "restore", "restored", loc)
	if r.Status.Backup != second.Status.LastBackup || !strings.Contains(r.Status.Backup, "_c"+made.Status.ClusterID+"_v") {
		t.Errorf("the restore says it took %q, want the new cluster's %s (cluster ID %s)", r.Status.Backup, second.Status.LastBackup, made.Status.ClusterID)
	}
	checkHolds(t, c, ns, "restored", "incarnation", "second")
}

// TestEtcdRestoreFromAPrefixTakesTheTimelineOfARollback backs a cluster up
// early to one prefix and later, at a higher revision, to a second; rolls
// it back by restoring the early snapshot (a new cluster, whose revisions
// go on from the early one's), backs the rolled-back cluster up to the
// second prefix, and restores from that prefix: the restored cluster holds
// the rolled-back data, not the later data of the abandoned timeline,
// though that timeline's snapshot has the higher revision.
func TestEtcdRestoreFromAPrefixTakesTheTimelineOfARollback(t *testing.T) {
	c, ns, source := startBackupSource(t)
	_, s3 := objectStoreFor(t, c, ns, "backups-"+ns)
	early, later := s3, s3
	early.Path, later.Path = s3.Path+"-early", s3.Path+"-later"
	earlyLoc, laterLoc := etcdv1beta2.BackupLocation{S3: &early}, etcdv1beta2.BackupLocation{S3: &later}

	putEach(t, etcdClientOf(t, c, source), map[string]string{"state": "early"}, 0)
	first := backupOnce(t, c, source, "early", earlyLoc)
	putEach(t, etcdClientOf(t, c, source), map[string]string{"state": "late"}, 50)
	abandoned := backupOnce(t, c, source, "late", laterLoc)

	// The rollback: the early snapshot, restored by its exact key.
	restoreAs(t, c, ns, "rollback", "rolledback", atKey(earlyLoc, first.Status.LastBackup))
	rolledBack := checkHolds(t, c, ns, "rolledback", "state", "early")
	putEach(t, etcdClientOf(t, c, rolledBack), map[string]string{"state": "after-rollback"}, 0)
	kept := backupOnce(t, c, rolledBack, "after-rollback", laterLoc)
	if kept.Status.EtcdRevision >= abandoned.Status.EtcdRevision {
		t.Fatalf("the rolled-back cluster's backup is at revision %d, the abandoned one's at %d: the test needs it lower", kept.Status.EtcdRevision, abandoned.Status.EtcdRevision)
	}

	r := restoreAs(t, c, ns, "from-prefix", "restored", laterLoc)
	if r.Status.Backup != kept.Status.LastBackup {
		t.Errorf("the restore says it took %q, want the rolled-back cluster's %s, not the abandoned %s", r.Status.Backup, kept.Status.LastBackup, abandoned.Status.LastBackup)
	}
	checkHolds(t, c, ns, "restored", "state", "after-rollback")
}

// restoreAs restores from loc into a new 3-member EtcdCluster called
// cluster, with an EtcdRestore called name, and returns the restore once
// it succeeded.
func restoreAs(t *testing.T, c client.Client, ns, name, cluster string, loc etcdv1beta2.BackupLocation) *etcdv1beta2.EtcdRestore {
	t.Helper()
	ctx := context.Background()
	r := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1beta2.EtcdRestoreSpec{
			SnapshotSource: etcdv1beta2.SnapshotSource{BackupStorageType: etcdv1beta2.BackupStorageTypeS3, BackupLocation: loc},
			EtcdCluster:    etcdv1beta2.EtcdClusterRef{Name: cluster},
			ClusterSpec:    etcdv1beta2.EtcdClusterSpec{Size: 3, Version: etcdVersion},
		},
	}
	if err := c.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return false, err.Error()
		}
		return r.Status.Succeeded, fmt.Sprintf("restore status %+v", r.Status)
	})
	return r
}

// checkHolds waits for the EtcdCluster called name to be Ready with 3
// members, checks that its key holds value, and returns the cluster.
func checkHolds(t *testing.T, c client.Client, ns, name, key, value string) *etcdv1beta2.EtcdCluster {
	t.Helper()
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	waitEtcdReady(t, c, e, 3, etcdVersion, time.Minute)
	resp, err := etcdClientOf(t, c, e).Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		t.Errorf("%s holds %s=%v (%v), want %q", name, key, resp, err, value)
	}
	return e
}

// putEach puts n keys filler/<i>, then kv.
func putEach(t *testing.T, cli *clientv3.Client, kv map[string]string, n int) {
	t.Helper()
	put := func(k, v string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	for i := range n {
		put(fmt.Sprintf("filler/%03d", i), "x")
	}
	for k, v := range kv {
		put(k, v)
	}
}

// backupOnce takes one snapshot of e to loc with an EtcdBackup called name,
// and returns the backup once it succeeded.
func backupOnce(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, name string, loc etcdv1beta2.BackupLocation) *etcdv1beta2.EtcdBackup {
	t.Helper()
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: name},
		Spec:       etcdv1beta2.EtcdBackupSpec{ClusterName: e.Name, StorageType: etcdv1beta2.BackupStorageTypeS3, BackupLocation: loc},
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, c, b, metav1.ConditionTrue, 3*time.Minute)
	if b.Status.LastBackup == "" || b.Status.EtcdRevision == 0 {
		t.Fatalf("backup %s status %+v, want where it is and its revision", name, b.Status)
	}
	return b
}

// waitEtcdGone waits until the deleted EtcdCluster e, its pods and its
// claims are gone: a cluster made again under its name must start empty.
func waitEtcdGone(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) {
	t.Helper()
	ctx := context.Background()
	testenv.EventuallyInNamespace(t, c, e.Namespace, 3*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), &etcdv1beta2.EtcdCluster{}); !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("EtcdCluster %s still there (%v)", e.Name, err)
		}
		pods, claims := &corev1.PodList{}, &corev1.PersistentVolumeClaimList{}
		if err := c.List(ctx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
			return false, err.Error()
		}
		if err := c.List(ctx, claims, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0 && len(claims.Items) == 0, fmt.Sprintf("%d pods and %d claims left", len(pods.Items), len(claims.Items))
	})
}
