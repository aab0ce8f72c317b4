// Package snapshottest helps the tests of the backup tools: an S3 server
// (SeaweedFS, from the binary in $WEED) and free loopback ports.
package snapshottest

import (
	"context"
	"fmt"
	"net"
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
	AccessKey = "snapshot-test"
	SecretKey = "snapshot-test-secret"
)

// StartS3 starts a SeaweedFS server (the binary in $WEED) with its S3 API on
// a free loopback port and one identity, creates the bucket "backups" and
// returns the S3 endpoint URL. The server stops with the test. Without WEED
// the test is skipped.
func StartS3(t *testing.T) string {
	t.Helper()
	weed := os.Getenv("WEED")
	if weed == "" {
		t.Skip("WEED is unset: the S3 tests need a SeaweedFS binary (make test sets WEED)")
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`{"identities":[{"name":"test","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, AccessKey, SecretKey)
	configPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s3Port := FreePort(t)
	// Every port is chosen, the gRPC ones too (by default each is its
	// HTTP port plus 10000, which may be taken or out of range).
	args := []string{
		"server", "-dir=" + dataDir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-volume.max=5",
		fmt.Sprintf("-master.port=%d", FreePort(t)), fmt.Sprintf("-master.port.grpc=%d", FreePort(t)),
		fmt.Sprintf("-volume.port=%d", FreePort(t)), fmt.Sprintf("-volume.port.grpc=%d", FreePort(t)),
		fmt.Sprintf("-filer.port=%d", FreePort(t)), fmt.Sprintf("-filer.port.grpc=%d", FreePort(t)),
		"-s3", fmt.Sprintf("-s3.port=%d", s3Port), fmt.Sprintf("-s3.port.grpc=%d", FreePort(t)), "-s3.config=" + configPath,
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
	client := S3Client(t, endpoint, SecretKey)
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

// S3Client is a path-style client of endpoint with the test's access key.
func S3Client(t *testing.T, endpoint, secret string) *minio.Client {
	t.Helper()
	client, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{
		Creds:        credentials.NewStaticV4(AccessKey, secret, ""),
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// CredentialsFile writes an AWS shared credentials file with the test's
// access key and secret, as a mounted Secret holds it.
func CredentialsFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials")
	content := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", AccessKey, secret)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
