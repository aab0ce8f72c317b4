package etcdsnapshot

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/app-operator/app-operator/internal/snapshotstore/snapshottest"
)

// TestS3SaveAndRestore saves a real etcd's snapshot into a bucket (keeping
// one backup), restores the newest from the prefix, and reads the keys back
// from etcd started on the restored data dir.
func TestS3SaveAndRestore(t *testing.T) {
	endpoint := snapshottest.StartS3(t)
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "source", t.TempDir()), true)
	cli := src.client(t)
	s3opts := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: snapshottest.CredentialsFile(t, snapshottest.SecretKey)}

	put(t, cli, "first", "1")
	first, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: "s3://backups/clusters/c1", S3: s3opts, MaxBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	rev := put(t, cli, "second", "2")
	time.Sleep(1100 * time.Millisecond) // a later time in the name
	second, err := Save(ctx, SaveOptions{Endpoints: []string{src.clientURL}, To: "s3://backups/clusters/c1", S3: s3opts, MaxBackups: 1})
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := ParseBackupName("s3://backups/clusters/c1", second.Key); !ok || info.ClusterID == 0 || second.Revision != rev || second.Size == 0 {
		t.Fatalf("second save: %+v, want revision %d under s3://backups/clusters/c1, named with the cluster's ID", second, rev)
	}
	put(t, cli, "after", "x")

	var keys []string
	for obj := range snapshottest.S3Client(t, endpoint, snapshottest.SecretKey).ListObjects(ctx, "backups", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		keys = append(keys, "s3://backups/"+obj.Key)
	}
	if len(keys) != 1 || keys[0] != second.Key {
		t.Fatalf("the bucket holds %v, want only %s (max 1 backup; %s pruned)", keys, second.Key, first.Key)
	}

	// Credentials from the environment this time.
	t.Setenv("AWS_ACCESS_KEY_ID", snapshottest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", snapshottest.SecretKey)
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := etcdConfig(t, "restored", dataDir)
	peer := cfg.AdvertisePeerUrls[0].String()
	res, err := Restore(ctx, RestoreOptions{
		From: "s3://backups/clusters/c1", S3: S3Options{Endpoint: endpoint, ForcePathStyle: true},
		DataDir: dataDir, Name: "restored", InitialCluster: "restored=" + peer, InitialClusterToken: "r", InitialAdvertisePeerURLs: []string{peer},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Key != second.Key || res.Revision != rev {
		t.Errorf("restored %+v, want %s at revision %d", res, second.Key, rev)
	}
	rcli := startEtcd(t, cfg, true).client(t)
	for k, v := range map[string]string{"first": "1", "second": "2"} {
		if got, found := get(t, rcli, k); !found || got != v {
			t.Errorf("restored %s = %q (found %v), want %q", k, got, found, v)
		}
	}
	if _, found := get(t, rcli, "after"); found {
		t.Error("the key written after the snapshot is in the restored cluster")
	}
}

// TestS3Failures: a missing bucket gives BucketNotFound, a wrong secret
// AccessDenied, for a save and for a restore.
func TestS3Failures(t *testing.T) {
	endpoint := snapshottest.StartS3(t)
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	good := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: snapshottest.CredentialsFile(t, snapshottest.SecretKey)}
	bad := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: snapshottest.CredentialsFile(t, "wrong-secret")}
	restoreTo := func(from string, s3opts S3Options) error {
		_, err := Restore(ctx, RestoreOptions{From: from, S3: s3opts, DataDir: filepath.Join(t.TempDir(), "d"), Name: "m",
			InitialCluster: "m=http://127.0.0.1:1", InitialAdvertisePeerURLs: []string{"http://127.0.0.1:1"}})
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want Reason
	}{
		{"save to a missing bucket", saveErr(ctx, src.clientURL, "s3://missing/c", good), ReasonBucketNotFound},
		{"save with a wrong secret", saveErr(ctx, src.clientURL, "s3://backups/c", bad), ReasonAccessDenied},
		{"restore from a missing bucket", restoreTo("s3://missing/c", good), ReasonBucketNotFound},
		{"restore with a wrong secret", restoreTo("s3://backups/c", bad), ReasonAccessDenied},
		{"restore from an empty prefix", restoreTo("s3://backups/none", good), ReasonNotFound},
	} {
		if ReasonOf(c.err) != c.want {
			t.Errorf("%s: reason %s (%v), want %s", c.name, ReasonOf(c.err), c.err, c.want)
		}
	}
}

func saveErr(ctx context.Context, endpoint, to string, s3opts S3Options) error {
	_, err := Save(ctx, SaveOptions{Endpoints: []string{endpoint}, To: to, S3: s3opts})
	return err
}
