package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFailureReport builds the command and runs a save against an address
// nobody listens at: it exits 1 and reports the failure, with its reason,
// on stdout and in the result file.
func TestFailureReport(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "etcd-snapshot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()

	resultFile := filepath.Join(dir, "result.json")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "save", "--endpoints="+endpoint, "--to="+filepath.Join(dir, "backups", "c"), "--timeout=30s", "--result-file="+resultFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("save exited with %v, want 1; stderr %s", err, stderr.String())
	}
	var printed struct{ Error, Reason string }
	if err := json.Unmarshal(stdout.Bytes(), &printed); err != nil || printed.Reason != "Unreachable" || printed.Error == "" {
		t.Fatalf("stdout %q (%v), want an error with reason Unreachable", stdout.String(), err)
	}
	written, err := os.ReadFile(resultFile)
	if err != nil || !bytes.Equal(bytes.TrimSpace(written), bytes.TrimSpace(stdout.Bytes())) {
		t.Fatalf("result file %q (%v), want what stdout got", written, err)
	}

	// A missing flag is an invalid argument, which trying again cannot
	// mend (exit 2, the Job fails at once), and an unknown command a usage
	// error.
	out, err := exec.Command(bin, "restore", "--from="+dir, "--result-file=").Output()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !bytes.Contains(out, []byte(`"reason":"InvalidArgument"`)) {
		t.Errorf("restore without a data dir: %v, %s", err, out)
	}
	if err := exec.Command(bin, "backup").Run(); !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Errorf("an unknown command exited with %v, want 2", err)
	}

	// A restore meant for another pod does nothing.
	skip := exec.Command(bin, "restore", "--only-pod=example-0", "--from="+dir, "--result-file=")
	skip.Env = append(os.Environ(), "POD_NAME=example-1")
	if out, err := skip.Output(); err != nil || !bytes.Contains(out, []byte(`"skipped":true`)) {
		t.Errorf("a restore in another pod: %v, %s; want it skipped", err, out)
	}
}
