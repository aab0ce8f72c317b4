package redissnapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// storeBackups writes rdbs as backups under prefix, an hour apart, and
// returns their names.
func storeBackups(t *testing.T, prefix string, rdbs ...[]byte) []string {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := make([]string, 0, len(rdbs))
	for i, rdb := range rdbs {
		name := BackupName(prefix, base.Add(time.Duration(i)*time.Hour), int64(i))
		if err := os.WriteFile(name, rdb, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// TestRestoreLaysOutAppendOnlyDir restores the newest backup under a
// prefix into an existing, empty data dir as appendonlydir with its
// manifest, and does nothing the second time.
func TestRestoreLaysOutAppendOnlyDir(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "redis")
	newest := fixture(t)
	storeBackups(t, prefix, testRDB(5, 1), newest)
	dataDir := t.TempDir()
	res, err := Restore(testContext(t), RestoreOptions{From: prefix, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Offset != 21232 || res.ReplicationID != "a4697e3a649a9a225adf2cf0c2074ad68daf0c34" || res.RedisVersion != "7.0.15" || res.Keys != 22 || res.Size != int64(len(newest)) {
		t.Errorf("result %+v, want the newest backup's header", res)
	}
	base, err := os.ReadFile(filepath.Join(dataDir, "appendonlydir", "appendonly.aof.1.base.rdb"))
	if err != nil || !bytes.Equal(base, newest) {
		t.Errorf("the base file: %d bytes, %v; want the newest backup", len(base), err)
	}
	manifest, err := os.ReadFile(filepath.Join(dataDir, "appendonlydir", "appendonly.aof.manifest"))
	if err != nil || string(manifest) != "file appendonly.aof.1.base.rdb seq 1 type b\n" {
		t.Errorf("the manifest: %q, %v", manifest, err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 1 {
		t.Errorf("the data dir holds %v, want appendonlydir alone", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(dataDir, "appendonlydir")); len(entries) != 2 {
		t.Errorf("appendonlydir holds %v, want the base and the manifest", entries)
	}

	res, err = Restore(testContext(t), RestoreOptions{From: prefix, DataDir: dataDir})
	if err != nil || !res.AlreadyRestored {
		t.Errorf("second restore: %+v, %v; want AlreadyRestored", res, err)
	}

	// A data dir that does not exist yet is created.
	fresh := filepath.Join(t.TempDir(), "data")
	if _, err := Restore(testContext(t), RestoreOptions{From: prefix, DataDir: fresh}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fresh, "appendonlydir", "appendonly.aof.manifest")); err != nil {
		t.Error(err)
	}
}

// TestRestoreLeavesDataAlone: a data dir with Redis data in any form is
// already restored; the backup is not even looked for.
func TestRestoreLeavesDataAlone(t *testing.T) {
	for _, existing := range []string{"dump.rdb", "appendonly.aof", "appendonlydir/"} {
		t.Run(existing, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, existing)
			var err error
			if existing[len(existing)-1] == '/' {
				err = os.Mkdir(path, 0o755)
			} else {
				err = os.WriteFile(path, []byte("x"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := Restore(testContext(t), RestoreOptions{From: filepath.Join(t.TempDir(), "none"), DataDir: dataDir})
			if err != nil || !res.AlreadyRestored {
				t.Errorf("restore: %+v, %v; want AlreadyRestored", res, err)
			}
		})
	}
}

// TestRestoreRefusesDamagedBackup: a damaged backup is Corrupt and leaves
// the data dir as it was; a missing one is NotFound.
func TestRestoreRefusesDamagedBackup(t *testing.T) {
	good := fixture(t)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 0x10
	for name, content := range map[string][]byte{"truncated": good[:len(good)-3], "flipped": flipped, "not an RDB": []byte("hello")} {
		t.Run(name, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "redis")
			names := storeBackups(t, prefix, content)
			dataDir := t.TempDir()
			_, err := Restore(testContext(t), RestoreOptions{From: names[0], DataDir: dataDir})
			if snapshotstore.ReasonOf(err) != conditions.ReasonCorrupt {
				t.Fatalf("restore: %v, want Corrupt", err)
			}
			if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
				t.Errorf("a failed restore left %v", entries)
			}
		})
	}
	_, err := Restore(testContext(t), RestoreOptions{From: filepath.Join(t.TempDir(), "none"), DataDir: t.TempDir()})
	if snapshotstore.ReasonOf(err) != conditions.ReasonNotFound {
		t.Errorf("restore from an empty prefix: %v, want NotFound", err)
	}
}

// TestRestoreOnceACluster: in the pod it is meant for, on an empty data
// folder, a restore does nothing once the cluster was restored (its
// ConfigMap says so): a node that starts empty later (persistence off)
// must not load the old backup again.
func TestRestoreOnceACluster(t *testing.T) {
	t.Setenv(redisbackup.PodNameEnv, "example-0")
	t.Setenv(redisbackup.RestoredEnv, "true")
	dataDir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"restore", "--only-pod=example-0", "--from=" + filepath.Join(t.TempDir(), "none"), "--data-dir=" + dataDir, "--result-file="}, &stdout, &stderr)
	if res, err := backuprun.ParseRedis(stdout.String()); code != 0 || err != nil || !res.Skipped {
		t.Errorf("a restore of a cluster restored already: exit %d, %s", code, stdout.String())
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("the data folder holds %d entries, want none", len(entries))
	}
}

// TestRestoreOnlyPod: a restore meant for another pod does nothing, and
// one without a data dir is an invalid argument (exit 2).
func TestRestoreOnlyPod(t *testing.T) {
	t.Setenv(redisbackup.PodNameEnv, "example-1")
	dataDir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"restore", "--only-pod=example-0", "--from=" + filepath.Join(t.TempDir(), "none"), "--data-dir=" + dataDir, "--result-file="}, &stdout, &stderr)
	if res, err := backuprun.ParseRedis(stdout.String()); code != 0 || err != nil || !res.Skipped {
		t.Errorf("a restore in another pod: exit %d, %s", code, stdout.String())
	}
	stdout.Reset()
	code = Main([]string{"restore", "--only-pod=example-1", "--from=" + filepath.Join(t.TempDir(), "none"), "--result-file="}, &stdout, &stderr)
	if res, _ := backuprun.ParseRedis(stdout.String()); code != 2 || res.Reason != string(conditions.ReasonInvalidArgument) {
		t.Errorf("a restore without a data dir: exit %d, %s", code, stdout.String())
	}
	if code := Main([]string{"backup"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unknown command exited %d, want 2", code)
	}
}
