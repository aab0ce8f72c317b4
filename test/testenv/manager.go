package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/app-operator/app-operator/test/cluster"
)

// BuildManager builds the manager binary into dir, the way `make build` does,
// and returns its path.
func BuildManager(dir string) (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "app-operator")
	cmd := exec.Command("go", "build", "-tags", cluster.ManagerBuildTags, "-o", bin, "./cmd/app-operator")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the manager: %v\n%s", err, out)
	}
	return bin, nil
}

// ManagerProcess is the manager binary running as a separate process.
type ManagerProcess struct {
	// Log is the path of the process's combined output.
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartManager runs the manager binary bin against kubeconfig, its output in
// logPath (appended to, so that restarts share one log), until the test
// ends or the process is stopped or killed.
func StartManager(t testing.TB, bin, kubeconfig, logPath string, args ...string) *ManagerProcess {
	t.Helper()
	return startManager(t, nil, bin, kubeconfig, logPath, args...)
}

// StartManagerAs is StartManager with the process running under uid (and
// the group of the same number), so a fault can cut that process alone off
// from a pod (iptables' owner match). bin and kubeconfig must be readable
// by uid.
func StartManagerAs(t testing.TB, uid uint32, bin, kubeconfig, logPath string, args ...string) *ManagerProcess {
	t.Helper()
	return startManager(t, &syscall.Credential{Uid: uid, Gid: uid}, bin, kubeconfig, logPath, args...)
}

func startManager(t testing.TB, cred *syscall.Credential, bin, kubeconfig, logPath string, args ...string) *ManagerProcess {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatal(err)
	}
	p := &ManagerProcess{Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("manager log %s:\n%s", logPath, data)
		}
	})
	return p
}

// Pid is the process id.
func (p *ManagerProcess) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited, and how.
func (p *ManagerProcess) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Kill sends SIGKILL, so the manager gets no chance to clean up (nor to
// release its Lease), and waits for the exit.
func (p *ManagerProcess) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop sends SIGTERM and waits for the exit; it fails the test if the
// manager is still running 15 s later (it is then killed).
func (p *ManagerProcess) Stop(t testing.TB) {
	t.Helper()
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.Kill()
		t.Error("the manager did not shut down within 15s of SIGTERM")
	}
}
