package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Kubectl runs the kubectl of binDir with args against the cluster of
// kubeconfig, and fails the test with its output if it fails.
func Kubectl(t testing.TB, binDir, kubeconfig string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
