package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/test/cluster"
)

// promtool returns the promtool to run: $PROMTOOL, else the one `make
// promtool` built into bin/.
func promtool(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("PROMTOOL"); bin != "" {
		return bin
	}
	root, _ := cluster.RepoRoot()
	matches, _ := filepath.Glob(filepath.Join(root, "bin", "promtool-*"))
	if len(matches) == 0 {
		t.Fatal("promtool not found: run `make promtool` (or set PROMTOOL)")
	}
	return matches[len(matches)-1]
}

// alertRules returns the spec of the PrometheusRule in
// config/prometheus/rules.yaml.
func alertRules(t *testing.T) map[string]any {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("config/prometheus/rules.yaml: %v", err)
	}
	if u.GetKind() != "PrometheusRule" {
		t.Fatalf("config/prometheus/rules.yaml holds a %s, want a PrometheusRule", u.GetKind())
	}
	spec, ok, _ := unstructured.NestedMap(u.Object, "spec")
	if !ok {
		t.Fatal("config/prometheus/rules.yaml: no spec")
	}
	return spec
}

// The alerts are valid Prometheus rules and pass their unit tests
// (config/prometheus/rules_test.yaml): promtool reads the PrometheusRule's
// spec as a rule file.
func TestAlertingRules(t *testing.T) {
	bin := promtool(t)
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rules, err := yaml.Marshal(alertRules(t))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": rules, "rules_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// The chart ships the alerts of config/prometheus/rules.yaml, unchanged.
func TestChartAndKustomizeShipTheSameAlerts(t *testing.T) {
	if got := byKind(helm(t), "PrometheusRule"); len(got) > 0 {
		t.Fatalf("the chart renders PrometheusRules %v by default; want them only with prometheusRule.enabled", sortedKeys(got))
	}
	h := bySuffix(t, helm(t, "prometheusRule.enabled=true"), "PrometheusRule", "controller-manager-alerts")
	if diff := cmp.Diff(alertRules(t), h.Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule spec (-config/prometheus +helm):\n%s", diff)
	}
}
