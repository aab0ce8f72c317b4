package etcdsnapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/version"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// restoreOptions restores into dataDir a one-member cluster named like cfg's
// member and on the same peer URL.
func restoreOptions(from, dataDir, name, peerURL string) RestoreOptions {
	return RestoreOptions{
		From:                     from,
		DataDir:                  dataDir,
		Name:                     name,
		InitialCluster:           name + "=" + peerURL,
		InitialClusterToken:      "restored",
		InitialAdvertisePeerURLs: []string{peerURL},
	}
}

// TestSaveAndRestoreLocal saves a real etcd's snapshot into a directory,
// checks the result, restores it into a new data dir, starts etcd on that
// data dir and reads back every key written before the snapshot, and not the
// one written after it.
func TestSaveAndRestoreLocal(t *testing.T) {
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "source", t.TempDir()), true)
	cli := src.client(t)
	want := map[string]string{}
	var rev int64
	for i := range 20 {
		k, v := fmt.Sprintf("key-%02d", i), strings.Repeat(fmt.Sprint(i), i+1)
		want[k] = v
		rev = put(t, cli, k, v)
	}

	backupDir := t.TempDir()
	resultFile := filepath.Join(t.TempDir(), "result.json")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"save", "--endpoints=" + src.clientURL, "--to=" + filepath.Join(backupDir, "prod/cluster"), "--timeout=1m", "--result-file=" + resultFile}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("save exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	var res Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("save printed %q: %v", stdout.String(), err)
	}
	fileBytes, err := os.ReadFile(resultFile)
	if err != nil || !bytes.Equal(bytes.TrimSpace(fileBytes), bytes.TrimSpace(stdout.Bytes())) {
		t.Fatalf("result file %q (%v), stdout %q", fileBytes, err, stdout.String())
	}
	if res.Revision != rev {
		t.Errorf("revision %d, want %d (the server's at snapshot time)", res.Revision, rev)
	}
	if res.EtcdVersion != version.Version {
		t.Errorf("etcdVersion %q, want %q", res.EtcdVersion, version.Version)
	}
	if res.Member != "source" {
		t.Errorf("member %q, want source", res.Member)
	}
	prefix := filepath.Join(backupDir, "prod/cluster")
	info, ok := ParseBackupName(prefix, res.Key)
	clusterID := uint64(src.etcd.Server.Cluster().ID())
	if !ok || info.Revision != rev || info.ClusterID != clusterID {
		t.Fatalf("key %q is not %s_c%x_v%d_<time>", res.Key, prefix, clusterID, rev)
	}
	gotTime := info.Time
	takenAt, err := res.TakenAt, error(nil)
	if err != nil || !takenAt.Equal(gotTime) || time.Since(takenAt) > time.Minute {
		t.Errorf("takenAt %q (%v), time in the name %v", res.TakenAt, err, gotTime)
	}
	fi, err := os.Stat(res.Key)
	if err != nil || fi.Size() != res.Size || res.Size == 0 {
		t.Fatalf("stored file %v (%v), size in the result %d", fi, err, res.Size)
	}
	entries, _ := os.ReadDir(filepath.Dir(res.Key))
	if len(entries) != 1 {
		t.Errorf("the backup directory holds %d entries, want the backup alone", len(entries))
	}
	if _, err := VerifyFile(res.Key); err != nil {
		t.Fatal(err)
	}

	put(t, cli, "after-snapshot", "x")

	// Restore from the prefix into a data dir that does not exist yet.
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := etcdConfig(t, "restored", dataDir)
	restoreResult := filepath.Join(t.TempDir(), "restore.json")
	stdout.Reset()
	code = Main([]string{"restore", "--from=" + prefix, "--data-dir=" + dataDir, "--name=restored",
		"--initial-cluster=restored=" + cfg.AdvertisePeerUrls[0].String(), "--initial-cluster-token=restored",
		"--initial-advertise-peer-urls=" + cfg.AdvertisePeerUrls[0].String(), "--result-file=" + restoreResult}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("restore exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	var rres Result
	if err := json.Unmarshal(stdout.Bytes(), &rres); err != nil || rres.Key != res.Key || rres.Revision != rev {
		t.Fatalf("restore printed %q (%v), want key %s revision %d", stdout.String(), err, res.Key, rev)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dataDir), ".data.restore")); !os.IsNotExist(err) {
		t.Errorf("the restore's work directory is left behind: %v", err)
	}

	restored := startEtcd(t, cfg, true)
	rcli := restored.client(t)
	for k, v := range want {
		if got, found := get(t, rcli, k); !found || got != v {
			t.Errorf("restored %s = %q (found %v), want %q", k, got, found, v)
		}
	}
	if _, found := get(t, rcli, "after-snapshot"); found {
		t.Error("the key written after the snapshot is in the restored cluster")
	}
	_ = ctx
}

// TestMaxBackups keeps the newest backups of a prefix and deletes the
// oldest beyond --max-backups, leaving other prefixes alone.
func TestMaxBackups(t *testing.T) {
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	cli := src.client(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "cluster-other_v1_20200101-000000")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := make([]string, 0, 4)
	for i := range 4 {
		put(t, cli, "k", fmt.Sprint(i))
		now := base.Add(time.Duration(i) * time.Hour)
		res, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: filepath.Join(dir, "cluster"), MaxBackups: 2, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Key)
	}
	for i, k := range keys {
		_, err := os.Stat(k)
		if kept := err == nil; kept != (i >= 2) {
			t.Errorf("backup %d (%s) kept=%v, want %v", i, k, kept, i >= 2)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a backup of another prefix was deleted: %v", err)
	}
}

// TestRestorePicksHighestRevision restores, from a prefix, the backup with
// the highest revision even when an older-revision backup has a later time.
func TestRestorePicksHighestRevision(t *testing.T) {
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	cli := src.client(t)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "c")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var highest Result
	for i := range 3 {
		put(t, cli, "k", fmt.Sprint(i))
		now := base.Add(-time.Duration(i) * time.Hour) // the higher revision, the earlier time
		res, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: prefix, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		highest = res
	}
	peer := "http://127.0.0.1:1"
	res, err := Restore(ctx, restoreOptions(prefix, filepath.Join(t.TempDir(), "d"), "m", peer))
	if err != nil {
		t.Fatal(err)
	}
	if res.Key != highest.Key || res.Revision != highest.Revision {
		t.Errorf("restored %s (revision %d), want %s (revision %d)", res.Key, res.Revision, highest.Key, highest.Revision)
	}

	// An exact name restores that backup.
	names, _ := filepath.Glob(prefix + "_*")
	backups := backupsUnder(prefix, names)
	res, err = Restore(ctx, restoreOptions(backups[0].Name, filepath.Join(t.TempDir(), "d"), "m", peer))
	if err != nil || res.Key != backups[0].Name || res.Revision != backups[0].Revision {
		t.Errorf("restore of the exact %s: %+v, %v", backups[0].Name, res, err)
	}

	// Nothing under a prefix: NotFound.
	_, err = Restore(ctx, restoreOptions(filepath.Join(dir, "none"), filepath.Join(t.TempDir(), "d"), "m", peer))
	if ReasonOf(err) != ReasonNotFound {
		t.Errorf("restore from an empty prefix: reason %s (%v), want NotFound", ReasonOf(err), err)
	}
}

// TestRestoreIdempotentAndIntoExistingDir restores into an existing, empty
// data dir (a mount point) and then does nothing on a second call.
func TestRestoreIdempotentAndIntoExistingDir(t *testing.T) {
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	put(t, src.client(t), "k", "v")
	res, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: t.TempDir() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ParseBackupName(filepath.Join(filepath.Dir(res.Key), "snapshot"), res.Key); !ok {
		t.Errorf("a directory target stores %s, want snapshot_c<cluster ID>_v<revision>_<time> in it", res.Key)
	}
	dataDir := t.TempDir()
	opts := restoreOptions(res.Key, dataDir, "m", "http://127.0.0.1:1")
	if _, err := Restore(ctx, opts); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dataDir, "member", "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dataDir)
	if len(entries) != 1 || entries[0].Name() != "member" {
		t.Errorf("the data dir holds %v, want member alone", entries)
	}
	res2, err := Restore(ctx, opts)
	if err != nil || !res2.AlreadyRestored {
		t.Fatalf("second restore: %+v, %v; want AlreadyRestored", res2, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the second restore changed the data dir: %v", err)
	}
}

// TestRestoreRefusesDamagedSnapshot refuses a truncated and a corrupted
// snapshot with Corrupt and leaves no data dir.
func TestRestoreRefusesDamagedSnapshot(t *testing.T) {
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	put(t, src.client(t), "k", "v")
	res, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: filepath.Join(t.TempDir(), "c")})
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(res.Key)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	for name, content := range map[string][]byte{
		"truncated": good[:len(good)-100],
		"corrupted": flipped,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c_v5_20260101-000000")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			dataDir := filepath.Join(t.TempDir(), "d")
			_, err := Restore(ctx, restoreOptions(path, dataDir, "m", "http://127.0.0.1:1"))
			if ReasonOf(err) != ReasonCorrupt || !strings.Contains(err.Error(), "integrity") {
				t.Fatalf("restore of a %s snapshot: reason %s, error %v; want Corrupt", name, ReasonOf(err), err)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("a data dir was left: %v", err)
			}
			if _, err := VerifyFile(path); ReasonOf(err) != ReasonCorrupt {
				t.Errorf("VerifyFile: %v, want Corrupt", err)
			}
		})
	}
}

// TestPartialSnapshotNeverStored checks that a stream that ends early
// leaves nothing under the backup's name, nor a temporary file.
func TestPartialSnapshotNeverStored(t *testing.T) {
	ctx := testContext(t)
	content := bytes.Repeat([]byte{7}, 3*sectorSize)
	sum := sha256.Sum256(content)
	whole := append(bytes.Clone(content), sum[:]...)
	dir := t.TempDir()
	name := filepath.Join(dir, "c_v1_20260101-000000")
	if _, err := (snapshotstore.LocalStore{}).Put(ctx, name, newVerifyingReader(bytes.NewReader(whole[:len(whole)-1]))); !errors.Is(err, errCorrupt) {
		t.Fatalf("put of a partial stream: %v, want a failed integrity check", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a partial stream left %v", entries)
	}
	if n, err := (snapshotstore.LocalStore{}).Put(ctx, name, newVerifyingReader(bytes.NewReader(whole))); err != nil || n != int64(len(whole)) {
		t.Fatalf("put of a whole stream: %d, %v", n, err)
	}
}

// TestSaveNoLeaderAndUnreachable: a member without a leader is never the
// source (NoLeader), and endpoints nobody answers at give Unreachable.
func TestSaveNoLeaderAndUnreachable(t *testing.T) {
	ctx := testContext(t)
	// A two-member cluster that loses one member: the survivor has no
	// quorum, so no leader.
	a, b := etcdConfig(t, "a", t.TempDir()), etcdConfig(t, "b", t.TempDir())
	cluster := fmt.Sprintf("a=%s,b=%s", a.AdvertisePeerUrls[0].String(), b.AdvertisePeerUrls[0].String())
	a.InitialCluster, b.InitialCluster = cluster, cluster
	ea, eb := startEtcd(t, a, false), startEtcd(t, b, false)
	for _, e := range []*testEtcd{ea, eb} {
		select {
		case <-e.etcd.Server.ReadyNotify():
		case <-time.After(time.Minute):
			t.Fatal("the two-member cluster did not become ready")
		}
	}
	eb.stop()
	cli := ea.client(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := cli.Status(sctx, ea.clientURL)
		cancel()
		if err == nil && resp.Leader == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the survivor still has a leader or does not answer: %v, %v", resp, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	dir := t.TempDir()
	_, err := Save(ctx, SaveOptions{Endpoints: []string{ea.clientURL, eb.clientURL}, To: filepath.Join(dir, "c")})
	if ReasonOf(err) != ReasonNoLeader {
		t.Errorf("save from a member without a leader: reason %s (%v), want NoLeader", ReasonOf(err), err)
	}

	_, err = Save(ctx, SaveOptions{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}, To: filepath.Join(dir, "c")})
	if ReasonOf(err) != ReasonUnreachable {
		t.Errorf("save from an endpoint nobody answers at: reason %s (%v), want Unreachable", ReasonOf(err), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed save left %v", entries)
	}
}

// TestRestoreFromAPrefixTwoClustersWroteTo backs up a cluster, then a
// new cluster of lower revisions to the same prefix (a cluster deleted and
// made again under the same name): a restore from the prefix brings back
// the new cluster's data, pruning keeps the new cluster's backups, and a
// backup of the old cluster after the new one's makes the restore refuse
// to choose.
func TestRestoreFromAPrefixTwoClustersWroteTo(t *testing.T) {
	ctx := testContext(t)
	old := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	oldCli := old.client(t)
	for i := range 30 {
		put(t, oldCli, "k", fmt.Sprintf("old-%d", i))
	}
	prefix := filepath.Join(t.TempDir(), "c")
	save := func(e *testEtcd, hour, maxBackups int) Result {
		t.Helper()
		now := day(hour)
		res, err := Save(ctx, SaveOptions{Endpoints: []string{e.clientURL}, To: prefix, MaxBackups: maxBackups, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	oldFirst := save(old, 1, 0)
	save(old, 2, 0)

	made := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	put(t, made.client(t), "k", "new")
	newer := save(made, 3, 0)
	newest := save(made, 4, 3)
	newID := uint64(made.etcd.Server.Cluster().ID())
	if info, _ := ParseBackupName(prefix, newest.Key); info.ClusterID != newID || newest.Revision >= oldFirst.Revision {
		t.Fatalf("the new cluster's backup %s (revision %d): want cluster ID %x and a revision below %d", newest.Key, newest.Revision, newID, oldFirst.Revision)
	}
	if _, err := os.Stat(oldFirst.Key); !os.IsNotExist(err) {
		t.Errorf("the oldest backup %s was kept (%v); pruning must delete the oldest by time", oldFirst.Key, err)
	}
	if _, err := os.Stat(newer.Key); err != nil {
		t.Errorf("the new cluster's backup %s was pruned: %v", newer.Key, err)
	}

	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := etcdConfig(t, "restored", dataDir)
	res, err := Restore(ctx, restoreOptions(prefix, dataDir, "restored", cfg.AdvertisePeerUrls[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Key != newest.Key {
		t.Errorf("restored %s, want the new cluster's newest %s", res.Key, newest.Key)
	}
	restored := startEtcd(t, cfg, true)
	if got, _ := get(t, restored.client(t), "k"); got != "new" {
		t.Errorf("the restored cluster holds k=%q, want the new cluster's %q", got, "new")
	}

	// The old cluster writes again: two clusters wrote at once.
	save(old, 5, 0)
	var stdout, stderr bytes.Buffer
	code := Main([]string{"restore", "--from=" + prefix, "--data-dir=" + filepath.Join(t.TempDir(), "d"), "--name=m",
		"--initial-cluster=m=http://127.0.0.1:1", "--initial-advertise-peer-urls=http://127.0.0.1:1", "--result-file=" + filepath.Join(t.TempDir(), "r.json")}, &stdout, &stderr)
	var failed Result
	if err := json.Unmarshal(stdout.Bytes(), &failed); err != nil || code != snapshotstore.ExitPermanent || failed.Reason != string(ReasonTimelinesInterleaved) ||
		!strings.Contains(failed.Error, fmt.Sprintf("%x", newID)) {
		t.Errorf("restore of interleaved clusters exited %d and printed %s (%v), want exit %d, reason TimelinesInterleaved naming %x",
			code, stdout.String(), err, snapshotstore.ExitPermanent, newID)
	}
	// An exact snapshot still restores.
	res, err = Restore(ctx, restoreOptions(newest.Key, filepath.Join(t.TempDir(), "d"), "m", "http://127.0.0.1:1"))
	if err != nil || res.Key != newest.Key || res.Revision != newest.Revision {
		t.Errorf("restore of the exact %s: %+v, %v", newest.Key, res, err)
	}
}
