package redissnapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestSavePicksReplicaInSync saves from the replica in sync rather than
// from the primary or a replica whose link is down (though further
// ahead), through Main: the result on stdout and in the file, the backup
// byte for byte under its name.
func TestSavePicksReplicaInSync(t *testing.T) {
	primary := &fakeNode{password: "pw", role: "master", offset: 300, rdb: testRDB(300, 2)}
	inSync := &fakeNode{password: "pw", role: "slave", linkUp: true, offset: 290, rdb: testRDB(290, 2)}
	behind := &fakeNode{password: "pw", role: "slave", linkUp: true, offset: 100, rdb: testRDB(100, 2)}
	down := &fakeNode{password: "pw", role: "slave", offset: 295, rdb: testRDB(295, 2)}
	syncing := &fakeNode{password: "pw", role: "slave", linkUp: true, syncing: true, offset: 299, rdb: testRDB(299, 2)}
	addrs := []string{primary.start(t), down.start(t), behind.start(t), inSync.start(t), syncing.start(t), freeAddr(t)}
	t.Setenv(redisbackup.PasswordEnv, "pw")

	dir := t.TempDir()
	resultFile := filepath.Join(t.TempDir(), "result.json")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"save", "--addrs=" + strings.Join(addrs, ","), "--to=" + filepath.Join(dir, "prod/redis"), "--result-file=" + resultFile}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("save exited %d: %s %s", code, stdout.String(), stderr.String())
	}
	var res Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("save printed %q: %v", stdout.String(), err)
	}
	if written, err := os.ReadFile(resultFile); err != nil || !bytes.Equal(written, stdout.Bytes()) {
		t.Errorf("result file %q (%v), stdout %q", written, err, stdout.String())
	}
	if res.Role != "replica" || res.Offset != 290 || res.Node != "127.0.0.1" || res.RedisVersion != "7.0.15" || res.ReplicationID != strings.Repeat("ab", 20) || res.Keys != 2 {
		t.Errorf("result %+v, want the replica in sync at offset 290", res)
	}
	if inSync.syncs.Load() != 1 || primary.syncs.Load()+down.syncs.Load()+behind.syncs.Load()+syncing.syncs.Load() != 0 {
		t.Errorf("SYNC sent to the wrong nodes")
	}
	prefix := filepath.Join(dir, "prod/redis")
	takenAt, offset, ok := ParseBackupName(prefix, res.Key)
	if !ok || offset != 290 || !takenAt.Equal(res.TakenAt) || time.Since(takenAt) > time.Minute {
		t.Errorf("key %q, takenAt %v: not %s_<time>_o290.rdb", res.Key, res.TakenAt, prefix)
	}
	stored, err := os.ReadFile(res.Key)
	if err != nil || !bytes.Equal(stored, inSync.rdb) || res.Size != int64(len(stored)) {
		t.Errorf("stored %d bytes (%v), size %d; want the replica's RDB", len(stored), err, res.Size)
	}
	if entries, _ := os.ReadDir(filepath.Dir(res.Key)); len(entries) != 1 {
		t.Errorf("the backup directory holds %v, want the backup alone", entries)
	}

	// No replica in sync: the primary.
	res, err = Save(testContext(t), SaveOptions{Addrs: []string{addrs[0], addrs[1]}, Credentials: Credentials{Password: "pw"}, To: dir + "/"})
	if err != nil || res.Role != "primary" || res.Offset != 300 || !strings.HasPrefix(filepath.Base(res.Key), "snapshot_") {
		t.Errorf("save without a replica in sync: %+v, %v; want the primary's into snapshot_...", res, err)
	}
}

// TestMaxBackups keeps the newest backups of a prefix and leaves other
// names alone.
func TestMaxBackups(t *testing.T) {
	node := &fakeNode{role: "master", rdb: fixture(t)}
	addr := node.start(t)
	dir := t.TempDir()
	others := []string{filepath.Join(dir, "redis-other_20200101-000000_o1.rdb"), filepath.Join(dir, "redis_notes.txt")}
	for _, o := range others {
		if err := os.WriteFile(o, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := make([]string, 0, 4)
	for i := range 4 {
		now := base.Add(time.Duration(i) * time.Hour)
		res, err := Save(testContext(t), SaveOptions{Addrs: []string{addr}, To: filepath.Join(dir, "redis"), MaxBackups: 2, Now: func() time.Time { return now }})
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
	for _, o := range others {
		if _, err := os.Stat(o); err != nil {
			t.Errorf("another name was deleted: %v", err)
		}
	}
}

// TestSaveFailures: refused credentials, nobody answering, no node in
// sync and a damaged or cut RDB each fail with their reason and store
// nothing.
func TestSaveFailures(t *testing.T) {
	good := fixture(t)
	damaged := bytes.Clone(good)
	damaged[100] ^= 0xff
	wrongPassword := (&fakeNode{password: "other", role: "master", rdb: good}).start(t)
	staleOnly := (&fakeNode{password: "pw", role: "slave", offset: 5, rdb: good}).start(t)
	corrupt := (&fakeNode{password: "pw", role: "master", rdb: damaged}).start(t)
	cut := (&fakeNode{password: "pw", role: "master", rdb: good[:300], announce: len(good)}).start(t)
	for _, c := range []struct {
		name  string
		addrs []string
		want  snapshotstore.Reason
		exit  int
	}{
		{"wrong password", []string{wrongPassword}, conditions.ReasonAccessDenied, 2},
		{"nobody answers", []string{freeAddr(t), freeAddr(t)}, conditions.ReasonUnreachable, 1},
		{"only a replica whose link is down", []string{staleOnly, freeAddr(t)}, conditions.ReasonNoNodeInSync, 1},
		{"damaged RDB", []string{corrupt}, conditions.ReasonCorrupt, 2},
		{"connection cut", []string{cut}, conditions.ReasonCorrupt, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(redisbackup.PasswordEnv, "pw")
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := Main([]string{"save", "--addrs=" + strings.Join(c.addrs, ","), "--to=" + filepath.Join(dir, "c"), "--result-file="}, &stdout, &stderr)
			res, err := backuprun.ParseRedis(stdout.String())
			if code != c.exit || err != nil || res.Reason != string(c.want) || res.Error == "" {
				t.Errorf("exit %d, result %s (%v); want exit %d, reason %s", code, stdout.String(), err, c.exit, c.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("a failed save left %v", entries)
			}
		})
	}
}

// TestSaveTakesOnlyAReplicaThatHoldsThePrimarysHistoryNow: a replica whose
// link still says up though it has not heard from its primary for 10 s
// (its link stays up for repl-timeout), and one further along another
// history (a replication ID that is not the primary's), are passed over,
// though either is further along than the replica chosen; with two
// primaries, no node is taken.
func TestSaveTakesOnlyAReplicaThatHoldsThePrimarysHistoryNow(t *testing.T) {
	primary := &fakeNode{role: "master", offset: 300, rdb: testRDB(300, 2)}
	current := &fakeNode{role: "slave", linkUp: true, lastIO: 1, offset: 280, rdb: testRDB(280, 2)}
	silent := &fakeNode{role: "slave", linkUp: true, lastIO: 10, offset: 299, rdb: testRDB(299, 2)}
	other := &fakeNode{role: "slave", linkUp: true, offset: 400, replID: strings.Repeat("cd", 20), rdb: testRDB(400, 2)}
	addrs := []string{primary.start(t), silent.start(t), other.start(t), current.start(t)}
	res, err := Save(testContext(t), SaveOptions{Addrs: addrs, To: t.TempDir() + "/"})
	if err != nil || res.Role != "replica" || res.Offset != 280 {
		t.Fatalf("save: %+v, %v; want the replica at offset 280", res, err)
	}
	if silent.syncs.Load()+other.syncs.Load()+primary.syncs.Load() != 0 {
		t.Errorf("SYNC sent to a node passed over")
	}

	second := &fakeNode{role: "master", offset: 500, replID: strings.Repeat("cd", 20), rdb: testRDB(500, 2)}
	_, err = Save(testContext(t), SaveOptions{Addrs: append(addrs, second.start(t)), To: t.TempDir() + "/"})
	var serr *snapshotstore.Error
	if !errors.As(err, &serr) || serr.Reason != conditions.ReasonNoNodeInSync || !strings.Contains(err.Error(), "all answer as primary") {
		t.Errorf("save with two primaries: %v, want %s naming both", err, conditions.ReasonNoNodeInSync)
	}
}
