package redissnapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/snapshotstore"
	"github.com/app-operator/app-operator/internal/snapshotstore/snapshottest"
)

// TestS3SaveAndRestore saves twice into a bucket with the keys from the
// environment (keeping one backup), restores the newest from the prefix,
// and fails with the reasons of a missing bucket, a wrong secret and
// missing keys.
func TestS3SaveAndRestore(t *testing.T) {
	endpoint := snapshottest.StartS3(t)
	ctx := testContext(t)
	t.Setenv(snapshotstore.AccessKeyEnv, snapshottest.AccessKey)
	t.Setenv(snapshotstore.SecretKeyEnv, snapshottest.SecretKey)
	s3opts := snapshotstore.S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsSecret: "redis-backup-s3"}
	first := &fakeNode{role: "master", offset: 10, rdb: testRDB(10, 1)}
	second := &fakeNode{role: "master", offset: 20, rdb: fixture(t)}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, node := range []*fakeNode{first, second} {
		now := at.Add(time.Duration(i) * time.Hour)
		if _, err := Save(ctx, SaveOptions{Addrs: []string{node.start(t)}, To: "s3://backups/redis/r1", S3: s3opts, MaxBackups: 1, Now: func() time.Time { return now }}); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for obj := range snapshottest.S3Client(t, endpoint, snapshottest.SecretKey).ListObjects(ctx, "backups", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	if want := "redis/r1_20260101-010000_o21232.rdb"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("the bucket holds %v, want only %s", keys, want)
	}

	dataDir := t.TempDir()
	res, err := Restore(ctx, RestoreOptions{From: "s3://backups/redis/r1", S3: s3opts, DataDir: dataDir})
	if err != nil || res.Key != "s3://backups/"+keys[0] || res.Offset != 21232 {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if base, err := os.ReadFile(filepath.Join(dataDir, aofDir, aofBase)); err != nil || !bytes.Equal(base, second.rdb) {
		t.Errorf("the restored base: %d bytes, %v", len(base), err)
	}

	node := second.start(t)
	saveErr := func(to string, opts snapshotstore.S3Options) error {
		_, err := Save(ctx, SaveOptions{Addrs: []string{node}, To: to, S3: opts})
		return err
	}
	if err := saveErr("s3://missing/r", s3opts); snapshotstore.ReasonOf(err) != conditions.ReasonBucketNotFound {
		t.Errorf("save to a missing bucket: %v", err)
	}
	t.Setenv(snapshotstore.SecretKeyEnv, "wrong-secret")
	if err := saveErr("s3://backups/r", s3opts); snapshotstore.ReasonOf(err) != conditions.ReasonAccessDenied {
		t.Errorf("save with a wrong secret: %v", err)
	}
	t.Setenv(snapshotstore.SecretKeyEnv, "")
	if err := saveErr("s3://backups/r", s3opts); snapshotstore.ReasonOf(err) != conditions.ReasonCredentialsMissing || !strings.Contains(err.Error(), "redis-backup-s3") {
		t.Errorf("save without the secret key: %v", err)
	}
}
