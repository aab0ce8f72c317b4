// Package snapshottest helps the tests of the backup tools: an S3 server
// (hack/objectstore, from the binary in $OBJECTSTORE) and free loopback
// ports.
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

// StartS3 starts the tests' S3 server (the binary in $OBJECTSTORE) on a
// free loopback port with one identity, creates the bucket "backups" and
// returns the S3 endpoint URL. The server stops with the test. Without
// OBJECTSTORE the test is skipped.
func StartS3(t *testing.T) string {
	t.Helper()
	binary := os.Getenv("OBJECTSTORE")
	if binary == "" {
		t.Skip("OBJECTSTORE is unset: the S3 tests need the object store's binary (make test sets OBJECTSTORE)")
	}
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte(AccessKey+" "+SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3Port := FreePort(t)
	logFile, err := os.Create(filepath.Join(dir, "objectstore.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, fmt.Sprintf("--listen=127.0.0.1:%d", s3Port), "--credentials="+creds)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", binary, err)
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
