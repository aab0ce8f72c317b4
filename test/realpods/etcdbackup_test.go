package realpods

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// backupWrites is a client that puts keys of its own, each once, through
// the client Service while a backup is taken, and records the revision
// etcd acknowledged each at: a restore of a snapshot of revision R must
// hold every key acknowledged at or before R, and none after.
type backupWrites struct {
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu sync.Mutex
	// acked maps a key to the revision of its acknowledged put.
	acked map[string]int64
	// unknown holds the keys whose put had no answer: either way.
	unknown map[string]bool
}

func startBackupWrites(t *testing.T, endpoint string) *backupWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &backupWrites{stop: cancel, acked: map[string]int64{}, unknown: map[string]bool{}}
	cli, err := etcdClient([]string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer cli.Close()
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("backup/%06d", i)
			c, done := context.WithTimeout(ctx, 2*time.Second)
			resp, err := cli.Put(c, key, key)
			done()
			w.mu.Lock()
			if err == nil {
				w.acked[key] = resp.Header.Revision
			} else {
				w.unknown[key] = true
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.Stop)
	return w
}

// Stop stops the client and waits for its last put.
func (w *backupWrites) Stop() {
	w.stop()
	w.wg.Wait()
}

// waitAcked waits until n more puts are acknowledged, and returns how many
// are by then.
func (w *backupWrites) waitAcked(t *testing.T, n int) int {
	t.Helper()
	count := func() (int, int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.acked), len(w.unknown)
	}
	before, _ := count()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		acked, unknown := count()
		return acked-before >= n, fmt.Sprintf("%d of %d puts acknowledged (%d without an answer)", acked-before, n, unknown)
	})
	acked, _ := count()
	return acked
}

// check reads every key back from cli, a client of the restored cluster,
// and fails t unless the cluster holds a prefix of the acknowledged
// writes that covers revision: every put acknowledged at or before it,
// and, of those acknowledged after (taken while the snapshot was being
// read), only ones whose every predecessor is there too. It returns how
// many acknowledged puts the restored cluster holds, and how many of
// those came after revision.
func (w *backupWrites) check(t *testing.T, cli *clientv3.Client, revision int64) (held, after int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "backup/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	there := map[string]bool{}
	for _, kv := range resp.Kvs {
		there[string(kv.Key)] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// The snapshot's true point: the latest acknowledged put it holds.
	point := revision
	for key, rev := range w.acked {
		if there[key] && rev > point {
			point = rev
		}
	}
	var lost []string
	for key, rev := range w.acked {
		switch {
		case rev <= point && !there[key]:
			lost = append(lost, fmt.Sprintf("%s@%d", key, rev))
		case there[key]:
			held++
			if rev > revision {
				after++
			}
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d writes acknowledged at or before revision %d (the snapshot says %d) are not in the restored cluster: %v", len(lost), point, revision, firstOf(lost, 10))
	}
	return held, after
}

func firstOf(s []string, n int) []string { return s[:min(n, len(s))] }

// objectStoreFor returns a client of the local cluster's object store,
// with a bucket of the test's own, and the Secret in ns that holds the
// store's credentials as an EtcdBackup names it.
func objectStoreFor(t *testing.T, c client.Client, ns, bucket string) (*minio.Client, etcdv1beta2.S3BackupSource) {
	t.Helper()
	store, ok := testCluster.ObjectStore()
	if !ok {
		t.Fatal("the local cluster runs no object store")
	}
	mc, err := minio.New(strings.TrimPrefix(store.Endpoint, "http://"), &minio.Options{Creds: credentials.NewStaticV4(store.AccessKey, store.SecretKey, ""), Secure: false})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v", bucket, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store-credentials"},
		StringData: map[string]string{etcdv1beta2.AWSSecretCredentialsFileName: fmt.Sprintf(
			"[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", store.AccessKey, store.SecretKey)},
	}
	if err := c.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	return mc, etcdv1beta2.S3BackupSource{Path: bucket + "/etcd/snap", AWSSecret: secret.Name, Endpoint: store.Endpoint, ForcePathStyle: true}
}

// waitBackup waits until b's Ready condition has status, and returns it.
func waitBackup(t *testing.T, c client.Client, b *etcdv1beta2.EtcdBackup, status metav1.ConditionStatus, timeout time.Duration) {
	t.Helper()
	testenv.EventuallyInNamespace(t, c, b.Namespace, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return false, err.Error()
		}
		r := findCondition(b.Status.Conditions, conditions.Ready)
		if r == nil {
			return false, "no Ready condition"
		}
		return r.Status == status && r.ObservedGeneration == b.Generation, fmt.Sprintf("Ready=%s %s: %s (status %+v)", r.Status, r.Reason, r.Message, b.Status)
	})
}

// TestEtcdBackupToS3ThenRestoreHoldsEveryWriteUpToItsRevision takes a
// snapshot into the object store while a client writes, restores it into
// a new cluster, and reads every write back: those acknowledged at or
// before the revision the backup reports are there, and the cluster holds
// a prefix of the writes (none missing before the latest it holds). The
// cluster backed up is left as it was.
func TestEtcdBackupToS3ThenRestoreHoldsEveryWriteUpToItsRevision(t *testing.T) {
	c, ns, source := startBackupSource(t)
	mc, s3 := objectStoreFor(t, c, ns, "backups-"+ns)
	loc := etcdv1beta2.BackupLocation{S3: &s3}
	run := backupThenRestore(t, c, source, etcdv1beta2.BackupStorageTypeS3, loc, nil)
	// With a backup taken and writes served, every metric the etcd
	// dashboard names is in a scrape of the operator and the members.
	checkDashboardMetrics(t, "etcd-clusters.json", ns, etcdMetricsPages(t, c, source)...)
	obj, err := mc.StatObject(context.Background(), "backups-"+ns, strings.TrimPrefix(run.key, "s3://backups-"+ns+"/"), minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the snapshot %s is not in the store: %v", run.key, err)
	}
	t.Logf("S3: %s; the snapshot is %d bytes", run, obj.Size)
}

// TestEtcdBackupToAClaimWhileTheClusterGrowsThenRestore keeps snapshots
// every few seconds on a PersistentVolumeClaim while the cluster grows
// from 3 members to 5: every backup taken meanwhile either succeeds or
// says why not, and the newest restores as the S3 one does.
func TestEtcdBackupToAClaimWhileTheClusterGrowsThenRestore(t *testing.T) {
	c, ns, source := startBackupSource(t)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backups"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	if err := c.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	loc := etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: claim.Name, Path: "etcd/source"}}
	grow := func(b *etcdv1beta2.EtcdBackup) {
		setEtcdSpec(t, c, source, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 5 })
		waitEtcdReady(t, c, source, 5, etcdVersion, 5*time.Minute)
	}
	run := backupThenRestore(t, c, source, etcdv1beta2.BackupStorageTypePersistentVolumeClaim, loc, grow)
	t.Logf("claim: %s", run)
}

// startBackupSource starts an operator that runs the snapshot tool of the
// operator's image, and a Ready cluster of three to back up.
func startBackupSource(t *testing.T) (client.Client, string, *etcdv1beta2.EtcdCluster) {
	t.Helper()
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns},
		Options: controller.Options{SnapshotImage: operatorImage(t)}})
	return c, ns, createEtcdSample(t, c, ns, "source", etcdVersion)
}

// backupRun is what backupThenRestore saw.
type backupRun struct {
	key             string
	revision        int64
	took, restore   time.Duration
	held, after     int
	acked, attempts int
}

func (r backupRun) String() string {
	return fmt.Sprintf("backup of revision %d Ready %s after it was created (%d backup jobs ended); restore Ready with 3 members %s after; %d of %d acknowledged writes restored, with no gap (%d of them acknowledged after the revision the backup reports, while the snapshot was read)",
		r.revision, r.took.Round(100*time.Millisecond), r.attempts, r.restore.Round(100*time.Millisecond), r.held, r.acked, r.after)
}

// backupThenRestore backs source up at loc while a client writes, once
// or, with during, every 5 s while during runs; restores the last
// snapshot into a new cluster of three; and checks the writes the
// restored cluster holds, and that source is as it was (but for during).
func backupThenRestore(t *testing.T, c client.Client, source *etcdv1beta2.EtcdCluster, storage etcdv1beta2.BackupStorageType, loc etcdv1beta2.BackupLocation,
	during func(*etcdv1beta2.EtcdBackup)) backupRun {
	t.Helper()
	ctx, ns := context.Background(), source.Namespace
	pods, restarts := etcdPodUIDs(t, c, source), etcdRestarts(t, c, source)
	w := startBackupWrites(t, clientServiceURL(t, c, source))
	// Writes acknowledged before the backup exists: each is at or before
	// any revision its snapshot is taken at, so the restore must hold them.
	ackedBefore := w.waitAcked(t, 50)
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"},
		Spec:       etcdv1beta2.EtcdBackupSpec{ClusterName: source.Name, StorageType: storage, BackupLocation: loc},
	}
	if during != nil {
		b.Spec.BackupPolicy = &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 5, MaxBackups: 3}
	}
	start := time.Now()
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, c, b, metav1.ConditionTrue, 3*time.Minute)
	run := backupRun{took: time.Since(start)}
	if during != nil {
		ended := watchBackupJobs(t, c, b)
		during(b)
		// Once the change is done, one more backup, to restore.
		since := time.Now()
		testenv.EventuallyInNamespace(t, c, ns, 3*time.Minute, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return false, err.Error()
			}
			ok := b.Status.LastSuccessDate != nil && b.Status.LastSuccessDate.After(since.Add(time.Second)) && b.Status.Succeeded
			return ok, fmt.Sprintf("status %+v", b.Status)
		})
		if err := c.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		run.attempts = ended()
	}
	time.Sleep(2 * time.Second)
	w.Stop()
	run.key, run.revision = b.Status.LastBackup, b.Status.EtcdRevision
	if run.revision == 0 || b.Status.EtcdVersion != etcdVersion || run.key == "" {
		t.Fatalf("backup status %+v, want a revision, version %s and where it is", b.Status, etcdVersion)
	}

	r := &etcdv1beta2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"},
		Spec: etcdv1beta2.EtcdRestoreSpec{
			// The snapshot the backup says it stored last.
			SnapshotSource: etcdv1beta2.SnapshotSource{BackupStorageType: storage, BackupLocation: atKey(loc, run.key)},
			EtcdCluster:    etcdv1beta2.EtcdClusterRef{Name: "restored"},
			ClusterSpec:    etcdv1beta2.EtcdClusterSpec{Size: 3, Version: etcdVersion},
		},
	}
	restoreStart := time.Now()
	if err := c.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	restored := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored"}}
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return false, err.Error()
		}
		return r.Status.Succeeded, fmt.Sprintf("restore status %+v", r.Status)
	})
	run.restore = time.Since(restoreStart)
	waitEtcdReady(t, c, restored, 3, etcdVersion, time.Minute)
	run.held, run.after = w.check(t, etcdClientOf(t, c, restored), run.revision)
	run.acked = len(w.acked)
	if run.held-run.after < ackedBefore {
		t.Errorf("the restored cluster holds %d acknowledged writes, %d of them after the snapshot's revision: want at least the %d acknowledged before the backup was created", run.held, run.after, ackedBefore)
	}
	if during == nil {
		// The cluster backed up is as it was.
		checkMembersKept(t, c, source, "backed up", etcdMemberIDs(source), pods, etcdClaimUIDs(t, c, source))
		if got := etcdRestarts(t, c, source); fmt.Sprint(got) != fmt.Sprint(restarts) {
			t.Errorf("restarts %v of the cluster backed up, want %v", got, restarts)
		}
	}
	return run
}

// atKey is loc narrowed to the snapshot key, as the backup reports it.
func atKey(loc etcdv1beta2.BackupLocation, key string) etcdv1beta2.BackupLocation {
	switch {
	case loc.S3 != nil:
		s3 := *loc.S3
		s3.Path = strings.TrimPrefix(key, "s3://")
		return etcdv1beta2.BackupLocation{S3: &s3}
	case loc.PersistentVolumeClaim != nil:
		pvc := *loc.PersistentVolumeClaim
		pvc.Path = strings.TrimPrefix(key, "/backup/")
		return etcdv1beta2.BackupLocation{PersistentVolumeClaim: &pvc}
	}
	return loc
}

// watchBackupJobs follows b's Jobs until the returned function is called,
// and fails t for a Job that ended neither with a snapshot stored nor
// with the tool's reason; the function returns how many Jobs ended.
func watchBackupJobs(t *testing.T, c client.Client, b *etcdv1beta2.EtcdBackup) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	ended := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(b.Namespace), client.MatchingLabels(etcdbackup.Selector(b.Name))); err == nil {
				mu.Lock()
				for _, p := range pods.Items {
					for _, s := range p.Status.ContainerStatuses {
						if term := s.State.Terminated; term != nil {
							ended[p.Name] = term.Message
						}
					}
				}
				mu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	return func() int {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for pod, msg := range ended {
			r, err := backuprun.ParseEtcd(msg)
			switch {
			case err != nil:
				t.Errorf("backup pod %s ended without a result: %q (%v)", pod, msg, err)
			case r.Failed() && r.Reason == "":
				t.Errorf("backup pod %s failed without a reason: %+v", pod, r)
			case !r.Failed() && (r.Key == "" || r.Revision == 0):
				t.Errorf("backup pod %s stored no snapshot: %+v", pod, r)
			case r.Failed():
				t.Logf("backup pod %s failed during the change: %s: %s", pod, r.Reason, r.Error)
			}
		}
		return len(ended)
	}
}

// TestEtcdBackupThatCannotBeWrittenSaysWhyAndLeavesTheClusterAlone: a
// bucket that does not exist and credentials the store refuses each fail
// the backup with the reason, and the cluster goes on serving.
func TestEtcdBackupThatCannotBeWrittenSaysWhyAndLeavesTheClusterAlone(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx := context.Background()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns},
		Options: controller.Options{SnapshotImage: operatorImage(t)}})
	e := createEtcdSample(t, c, ns, "kept", etcdVersion)
	_, s3 := objectStoreFor(t, c, ns, "bucket-"+ns)

	wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"},
		StringData: map[string]string{etcdv1beta2.AWSSecretCredentialsFileName: "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n"}}
	if err := c.Create(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, reason string
		mutate       func(*etcdv1beta2.S3BackupSource)
	}{
		{"nobucket", "BucketNotFound", func(s *etcdv1beta2.S3BackupSource) { s.Path = "no-such-bucket-" + ns + "/etcd" }},
		{"refused", "AccessDenied", func(s *etcdv1beta2.S3BackupSource) { s.AWSSecret = wrong.Name }},
		{"nosecret", "CredentialsMissing", func(s *etcdv1beta2.S3BackupSource) { s.AWSSecret = "absent" }},
	} {
		loc := s3
		tc.mutate(&loc)
		b := &etcdv1beta2.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name},
			Spec: etcdv1beta2.EtcdBackupSpec{ClusterName: e.Name, StorageType: etcdv1beta2.BackupStorageTypeS3,
				BackupLocation: etcdv1beta2.BackupLocation{S3: &loc}},
		}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitBackup(t, c, b, metav1.ConditionFalse, 3*time.Minute)
		testenv.EventuallyInNamespace(t, c, ns, 2*time.Minute, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return false, err.Error()
			}
			r := findCondition(b.Status.Conditions, conditions.Ready)
			return r != nil && r.Reason == tc.reason && !b.Status.Succeeded, fmt.Sprintf("%s: Ready %+v", tc.name, r)
		})
		t.Logf("%s: %s", tc.name, b.Status.Reason)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, time.Minute)
}

// operatorImageRef is the operator's image in the local registry, which
// EtcdBackup Jobs and restores run.
const operatorImageRef = "app-operator:realpods"

// snapshotImage is the operator's image built and pushed once for the
// package.
var snapshotImage struct {
	once sync.Once
	err  error
}

// operatorImage builds the operator's image (the manager and the etcd
// snapshot tool), pushes it to the local registry once, and returns its
// name as pods pull it.
func operatorImage(t *testing.T) string {
	t.Helper()
	snapshotImage.once.Do(func() {
		root, err := cluster.RepoRoot()
		if err != nil {
			snapshotImage.err = err
			return
		}
		dir, err := os.MkdirTemp("", "app-operator-image-")
		if err != nil {
			snapshotImage.err = err
			return
		}
		defer os.RemoveAll(dir)
		archive, err := cluster.BuildOperatorImage(root, dir, operatorImageRef)
		if err != nil {
			snapshotImage.err = err
			return
		}
		snapshotImage.err = testCluster.PushImageArchive(context.Background(), archive, operatorImageRef)
	})
	if snapshotImage.err != nil {
		t.Fatal(snapshotImage.err)
	}
	return operatorImageRef
}
