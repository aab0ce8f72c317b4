package snapshotstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// TestLocalPutIsWholeOrNothing: a stream that fails leaves nothing under
// the name, nor a temporary file; a whole one is stored.
func TestLocalPutIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	name := filepath.Join(dir, "sub", "c_1")
	broken := iotest.TimeoutReader(bytes.NewReader(bytes.Repeat([]byte{1}, 1<<20)))
	if _, err := (LocalStore{}).Put(ctx, name, broken); err == nil {
		t.Fatal("a failed stream was stored")
	}
	if entries, _ := os.ReadDir(filepath.Dir(name)); len(entries) != 0 {
		t.Fatalf("a failed stream left %v", entries)
	}
	if n, err := (LocalStore{}).Put(ctx, name, strings.NewReader("whole")); err != nil || n != 5 {
		t.Fatalf("put: %d, %v", n, err)
	}
	if got, err := os.ReadFile(name); err != nil || string(got) != "whole" {
		t.Fatalf("stored %q, %v", got, err)
	}
}

// TestOpenNames: a directory target gets the default base name; a
// malformed target is an invalid argument.
func TestOpenNames(t *testing.T) {
	dir := t.TempDir()
	for target, want := range map[string]string{
		dir:                  filepath.Join(dir, "snapshot"),
		dir + "/x/":          filepath.Join(dir, "x", "snapshot"),
		dir + "/prod/redis1": filepath.Join(dir, "prod", "redis1"),
	} {
		if _, name, err := Open(target, S3Options{}); err != nil || name != want {
			t.Errorf("Open(%q) = %q, %v; want %q", target, name, err, want)
		}
	}
	for _, bad := range []string{"", "http://x/y", "s3:///key"} {
		if _, _, err := Open(bad, S3Options{}); ReasonOf(err) != conditions.ReasonInvalidArgument {
			t.Errorf("Open(%q): %v, want InvalidArgument", bad, err)
		}
	}
	if _, name, err := Open("s3://bucket/", S3Options{}); err != nil || name != "snapshot" {
		t.Errorf("Open(s3://bucket/) = %q, %v", name, err)
	}
}

// TestCredentialsFromEnvironment: with no credentials file, a named
// Secret whose keys are not in the environment is CredentialsMissing.
func TestCredentialsFromEnvironment(t *testing.T) {
	t.Setenv(AccessKeyEnv, "")
	t.Setenv(SecretKeyEnv, "")
	_, _, err := Open("s3://bucket/c", S3Options{CredentialsSecret: "backup-s3"})
	if ReasonOf(err) != conditions.ReasonCredentialsMissing || !strings.Contains(err.Error(), `"backup-s3"`) {
		t.Errorf("empty environment: %v, want CredentialsMissing naming the Secret", err)
	}
	t.Setenv(AccessKeyEnv, "id")
	t.Setenv(SecretKeyEnv, "secret")
	if _, _, err := Open("s3://bucket/c", S3Options{CredentialsSecret: "backup-s3"}); err != nil {
		t.Errorf("credentials in the environment: %v", err)
	}
}

// TestPrune deletes the oldest beyond keep, never the one just saved.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	names := make([]string, 0, 4)
	for _, n := range []string{"a", "b", "c", "d"} {
		name := filepath.Join(dir, n)
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	// "a" is the one just saved, though the oldest by its name.
	if err := Prune(ctx, LocalStore{}, names, names[0], 2); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		_, err := os.Stat(name)
		if kept := err == nil; kept != (i == 0 || i == 3) {
			t.Errorf("%s kept=%v", name, kept)
		}
	}
}

// TestReport prints the result, or the failure with its reason and the
// exit code the tools agree on.
func TestReport(t *testing.T) {
	if etcdbackup.ExitPermanent != ExitPermanent || redisbackup.ExitPermanent != ExitPermanent {
		t.Fatalf("the exit code of a permanent failure differs: %d, %d, %d", etcdbackup.ExitPermanent, redisbackup.ExitPermanent, ExitPermanent)
	}
	var stdout, stderr bytes.Buffer
	resultFile := filepath.Join(t.TempDir(), "result.json")
	rep := Reporter{Tool: "x-snapshot", Stdout: &stdout, Stderr: &stderr, ResultFile: resultFile}
	if code := rep.Report(backuprun.RedisResult{Report: backuprun.Report{Key: "k", Size: 3}}, nil); code != 0 || stdout.String() != `{"key":"k","size":3}`+"\n" {
		t.Errorf("success: %d, %q", code, stdout.String())
	}
	stdout.Reset()
	err := &Error{Reason: conditions.ReasonAccessDenied, Err: errors.New("denied")}
	if code := rep.Report(backuprun.RedisResult{Report: backuprun.Report{Key: "k"}}, err); code != ExitPermanent || stdout.String() != `{"reason":"AccessDenied","error":"denied"}`+"\n" {
		t.Errorf("failure: %d, %q", code, stdout.String())
	}
	if got, _ := os.ReadFile(resultFile); string(got) != stdout.String() || !strings.Contains(stderr.String(), "x-snapshot: denied") {
		t.Errorf("result file %q, stderr %q", got, stderr.String())
	}
	if code := rep.Report(backuprun.RedisResult{}, errors.New("boom")); code != 1 {
		t.Errorf("a transient failure exited %d, want 1", code)
	}
}
