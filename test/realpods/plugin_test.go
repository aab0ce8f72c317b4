package realpods

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/plugin"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The kubectl plugin as a user runs it, `kubectl app-operator`, found by
// kubectl on the PATH, against a Redis cluster on real pods: status names
// the primary and every node with its pod ready, in 100 columns; pause
// makes the operator say Paused, resume lets it act again; report writes
// an archive of the resource and what it owns.
func TestKubectlPluginOnARedisCluster(t *testing.T) {
	c, _, r := startCell(t, "plugin", true)
	kubectl := pluginKubectl(t)

	screen := kubectl("app-operator", "status", "rec", r.rec.Name, "-n", r.rec.Namespace)
	t.Log("\n" + screen)
	for i, l := range strings.Split(screen, "\n") {
		if utf8.RuneCountInString(l) > plugin.Width {
			t.Errorf("line %d is wider than %d columns: %q", i+1, plugin.Width, l)
		}
	}
	r.refresh()
	for _, want := range []string{"Primary:     " + r.rec.Status.Primary, "State:       Running"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the status screen lacks %q", want)
		}
	}
	for _, n := range r.rec.Status.Nodes {
		if !lineWith(screen, n.Name, n.Role, "yes", "Ready") {
			t.Errorf("the status screen has no line with %s, %s, healthy and its pod Ready", n.Name, n.Role)
		}
		// Each replica's lag, read from the nodes by redis-cli in their
		// containers.
		if n.Role == redisv1alpha1.RoleReplica && !regexp.MustCompile(`(?m)^\s*`+n.Name+`\s+replica\s.*\s\d+ B$`).MatchString(screen) {
			t.Errorf("the status screen shows no lag in bytes for the replica %s", n.Name)
		}
	}
	if strings.Contains(screen, "Lag:") {
		t.Errorf("the status screen says a node could not be asked for its lag:\n%s", screen)
	}

	kubectl("app-operator", "pause", "rec/"+r.rec.Name, "-n", r.rec.Namespace)
	cond := waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
		conditions.Progressing, metav1.ConditionFalse, conditions.ReasonPaused, 2*time.Minute)
	t.Logf("paused: Progressing=False %s: %s", cond.Reason, cond.Message)
	if screen := kubectl("app-operator", "status", "rec", r.rec.Name, "-n", r.rec.Namespace); !strings.Contains(screen, "PAUSED") {
		t.Errorf("the status of a paused cluster does not say so:\n%s", screen)
	}
	kubectl("app-operator", "resume", "rec", r.rec.Name, "-n", r.rec.Namespace)
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		r.refresh()
		p := meta.FindStatusCondition(r.rec.Status.Conditions, conditions.Progressing)
		return p != nil && p.Reason != conditions.ReasonPaused, fmt.Sprintf("Progressing %+v after resume", p)
	})
	r.waitRunning(2 * time.Minute)

	archive := filepath.Join(t.TempDir(), "report.tar.gz")
	kubectl("app-operator", "report", "rec", r.rec.Name, "-n", r.rec.Namespace, "-o", archive)
	files := archiveFiles(t, archive)
	for _, want := range []string{"resource.yaml", "children/statefulset-" + r.rec.Name + ".yaml", "children/pod-" + r.rec.Status.Primary + ".yaml", "events.yaml", "operator.log"} {
		if !files[want] {
			t.Errorf("the report lacks %s: %v", want, files)
		}
	}
}

// pluginKubectl builds the plugin into a folder it puts first on the
// PATH, and returns a function that runs the cluster's kubectl with args
// and returns its output, failing the test if it fails.
func pluginKubectl(t *testing.T) func(args ...string) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-app_operator"), "./cmd/kubectl-app_operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(testCluster.BinDir(), "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+testCluster.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// lineWith reports whether a line of text has every one of words as a
// field.
func lineWith(text string, words ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		fields := strings.Fields(l)
		all := true
		for _, w := range words {
			found := false
			for _, f := range fields {
				found = found || f == w
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}

// archiveFiles returns the names of the files of a gzipped tar archive.
func archiveFiles(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = true
	}
}
