package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRedisFailoverAfterBelowItsFloorIsRefused starts the manager with a
// failover window shorter than Redis's min-replicas-max-lag allows: it
// exits at once, with code 2, naming the flag and its floor.
func TestRedisFailoverAfterBelowItsFloorIsRefused(t *testing.T) {
	if os.Getenv("APP_OPERATOR_RUN_MAIN") == "1" {
		os.Args = append([]string{"app-operator"}, strings.Fields(os.Getenv("APP_OPERATOR_ARGS"))...)
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedisFailoverAfterBelowItsFloorIsRefused$")
	cmd.Env = append(os.Environ(), "APP_OPERATOR_RUN_MAIN=1", "APP_OPERATOR_ARGS=--redis-failover-after=11s", "KUBECONFIG=/nonexistent")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want code 2; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "--redis-failover-after must be at least 12s") {
		t.Errorf("output %q, want it to name the flag and its floor", out)
	}
}
