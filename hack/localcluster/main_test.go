package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/app-operator/app-operator/test/cluster"
)

// TestDemoExitsCleanlyOnCtrlC runs the demo as `make demo` does and sends
// SIGINT to its process group, as Ctrl-C in a terminal does, once at start-up
// and once when everything is running: the demo exits 0, and no process it
// started is left. When everything runs, every sample is Ready (with real
// pods, every sample that can run, and the MicroServiceDeploy sample says
// why it cannot, and the demo shows the MyWeb page, a memcached stats
// line, a key of the EtcdCluster sample and, for the RedisEnterpriseCluster
// sample, run with the resources the demo names, its roles and a key
// through its primary Service): the samples share one namespace and one
// cluster, as config/samples' kustomization applies them.
func TestDemoExitsCleanlyOnCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := t.TempDir()
	for _, pkg := range []string{"./hack/localcluster", "./cmd/app-operator"} {
		build := exec.Command("go", "build", "-tags", cluster.ManagerBuildTags, "-o", bins, pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}

	for _, tc := range []struct {
		name, interruptAt string
		wantReady         bool
	}{
		{"while the operator starts", "==> Starting the operator", false},
		{"when everything runs", "Ctrl-C stops everything", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bins, "localcluster"), "demo", "--operator="+filepath.Join(bins, "app-operator"))
			cmd.Dir = root
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			lines := make(chan string, 1000)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				_, _ = io.Copy(io.Discard, stdout)
				done <- cmd.Wait()
			}()

			var out []string
			runDir := ""
			read := func(line string) {
				out = append(out, line)
				if dir, ok := strings.CutPrefix(line, "Stopped; logs kept in "); ok {
					runDir = filepath.Dir(dir)
				}
			}
			interrupted := false
			// With real pods, the demo may first wait for the other suites'
			// real nodes to stop (one per machine): minutes in a whole make test.
			timeout := time.After(12 * time.Minute)
			for !interrupted {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("the demo ended before %q:\n%s\n%s", tc.interruptAt, strings.Join(out, "\n"), stderr.String())
					}
					read(line)
					if strings.Contains(line, tc.interruptAt) {
						if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
							t.Fatal(err)
						}
						interrupted = true
					}
				case <-timeout:
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("no %q within 12 minutes:\n%s", tc.interruptAt, strings.Join(out, "\n"))
				}
			}
			for line := range lines {
				read(line)
			}
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the demo did not exit within a minute of SIGINT:\n%s", strings.Join(out, "\n"))
			}
			if err != nil {
				t.Errorf("the demo exited with %v after SIGINT, want 0:\n%s\n%s", err, strings.Join(out, "\n"), stderr.String())
			}
			if tc.wantReady {
				realPods := hasLine(out, "Cluster ready", "pods run for real")
				for _, kind := range []string{"AppService", "WebService", "Memcached", "MicroServiceDeploy", "MyWeb"} {
					// With real pods, the MicroServiceDeploy sample (an
					// image name that is no image, 2 CPUs for each of three
					// pods) cannot run and must say why.
					if realPods && kind == "MicroServiceDeploy" {
						if !hasLine(out, kind+" ", ": not Ready, PodUnschedulable: ") && !hasLine(out, kind+" ", ": not Ready, ImagePullFailed: ") {
							t.Errorf("no line says why the %s sample cannot run:\n%s", kind, strings.Join(out, "\n"))
						}
					} else if !hasLine(out, kind+" ", ": Ready") {
						t.Errorf("no line says the %s sample is Ready:\n%s", kind, strings.Join(out, "\n"))
					}
					if !hasLine(out, "  "+kind+" ", "kubectl -n demo ") {
						t.Errorf("no line says how to look at the %s sample:\n%s", kind, strings.Join(out, "\n"))
					}
				}
				// With real pods, the EtcdCluster sample runs at a version
				// the cluster has, and a key written to it reads back.
				if realPods {
					if !hasLine(out, "EtcdCluster ", ": Ready") || !hasLine(out, "    put demo, then get demo through ", `"written by make demo at `) {
						t.Errorf("the demo did not show the EtcdCluster sample Ready and serving a key:\n%s", strings.Join(out, "\n"))
					}
				}
				// With real pods, the RedisEnterpriseCluster sample runs with
				// the resources the demo says, open-source Redis in place of
				// its Redis Enterprise image, and a key written through its
				// primary Service reads back.
				if realPods {
					if !hasLine(out, "==> Applying the RedisEnterpriseCluster sample", "requests 50m, 64Mi") ||
						!hasLine(out, "RedisEnterpriseCluster ", ": Ready") ||
						!hasLine(out, "RedisEnterpriseCluster redis-enterprise, nodes from its status: ", "(primary)") ||
						!hasLine(out, "    ImageReplaced: ", "running redis:7.0.15 instead") ||
						!hasLine(out, "    SET demo (WAIT 1: ", `"written by make demo at `) {
						t.Errorf("the demo did not show the RedisEnterpriseCluster sample Ready, its roles and a key through its primary:\n%s", strings.Join(out, "\n"))
					}
					if !hasLine(out, "  RedisEnterpriseCluster ", "kubectl -n demo ") {
						t.Errorf("no line says how to look at the RedisEnterpriseCluster sample:\n%s", strings.Join(out, "\n"))
					}
				}
				// What the running samples serve, fetched by the demo.
				if realPods && (!hasLine(out, "        <h1>Hello, World!</h1>", "") || !hasLine(out, "    STAT version ", "")) {
					t.Errorf("the demo did not show the MyWeb page and a memcached stats line:\n%s", strings.Join(out, "\n"))
				}
			}
			if runDir == "" {
				t.Fatalf("the demo did not say where its cluster ran:\n%s", strings.Join(out, "\n"))
			}
			if left := processesUsing(t, runDir); len(left) > 0 {
				t.Errorf("processes left running:\n%s", strings.Join(left, "\n"))
			}
			if !t.Failed() {
				_ = os.RemoveAll(runDir)
			}
		})
	}
}

// hasLine reports whether a line of out starts with prefix and holds part.
func hasLine(out []string, prefix, part string) bool {
	for _, line := range out {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, part) {
			return true
		}
	}
	return false
}

// processesUsing lists the running processes whose command line names dir
// (every component and the operator get a path in it).
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the process is gone
		}
		if cmd := string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})); strings.Contains(cmd, dir) {
			out = append(out, cmd)
		}
	}
	return out
}
