package etcdsnapshot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The S3 identity the test server knows.
const (
	testAccessKey = "snapshot-test"
	testSecretKey = "snapshot-test-secret"
)

// startS3 starts a SeaweedFS server (the binary in $WEED) with its S3 API on
// a free loopback port and one identity, creates the bucket "backups" and
// returns the S3 endpoint URL. The server stops with the test. Without WEED
// the test is skipped.
func startS3(t *testing.T) string {
	t.Helper()
	weed := os.Getenv("WEED")
	if weed == "" {
		t.Skip("WEED is unset: the S3 tests need a SeaweedFS binary (make test sets WEED)")
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`{"identities":[{"name":"test","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, testAccessKey, testSecretKey)
	configPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s3Port := freePort(t)
	// Every port is chosen, the gRPC ones too (by default each is its
	// HTTP port plus 10000, which may be taken or out of range).
	args := []string{
		"server", "-dir=" + dataDir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-volume.max=5",
		fmt.Sprintf("-master.port=%d", freePort(t)), fmt.Sprintf("-master.port.grpc=%d", freePort(t)),
		fmt.Sprintf("-volume.port=%d", freePort(t)), fmt.Sprintf("-volume.port.grpc=%d", freePort(t)),
		fmt.Sprintf("-filer.port=%d", freePort(t)), fmt.Sprintf("-filer.port.grpc=%d", freePort(t)),
		"-s3", fmt.Sprintf("-s3.port=%d", s3Port), fmt.Sprintf("-s3.port.grpc=%d", freePort(t)), "-s3.config=" + configPath,
	}
	logFile, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(weed, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", weed, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})

	endpoint := fmt.Sprintf("http://127.0.0.1:%d", s3Port)
	client := s3Client(t, endpoint, testSecretKey)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := client.MakeBucket(ctx, "backups", minio.MakeBucketOptions{})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("the S3 server did not create a bucket within 90s: %v\n%s", err, log)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return endpoint
}

// s3Client is a path-style client of endpoint with the test's access key.
func s3Client(t *testing.T, endpoint, secret string) *minio.Client {
	t.Helper()
	client, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds:        credentials.NewStaticV4(testAccessKey, secret, ""),
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// credentialsFile writes an AWS shared credentials file with the test's
// access key and secret, as a mounted Secret holds it.
func credentialsFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials")
	content := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", testAccessKey, secret)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestS3SaveAndRestore saves a real etcd's snapshot into a bucket (keeping
// one backup), restores the newest from the prefix, and reads the keys back
// from etcd started on the restored data dir.
func TestS3SaveAndRestore(t *testing.T) {
	endpoint := startS3(t)
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "source", t.TempDir()), true)
	cli := src.client(t)
	s3opts := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: credentialsFile(t, testSecretKey)}

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
	if second.Revision != rev || !strings.HasPrefix(second.Key, "s3://backups/clusters/c1_v") || second.Size == 0 {
		t.Fatalf("second save: %+v, want revision %d under s3://backups/clusters/c1_v", second, rev)
	}
	put(t, cli, "after", "x")

	var keys []string
	for obj := range s3Client(t, endpoint, testSecretKey).ListObjects(ctx, "backups", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		keys = append(keys, "s3://backups/"+obj.Key)
	}
	if len(keys) != 1 || keys[0] != second.Key {
		t.Fatalf("the bucket holds %v, want only %s (max 1 backup; %s pruned)", keys, second.Key, first.Key)
	}

	// Credentials from the environment this time.
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
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
	endpoint := startS3(t)
	ctx := testContext(t)
	src := startEtcd(t, etcdConfig(t, "m", t.TempDir()), true)
	good := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: credentialsFile(t, testSecretKey)}
	bad := S3Options{Endpoint: endpoint, ForcePathStyle: true, CredentialsFile: credentialsFile(t, "wrong-secret")}
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
