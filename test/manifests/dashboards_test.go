package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/app-operator/app-operator/test/cluster"
)

// The Grafana dashboards of config/grafana, as kustomize and the chart
// (with grafana.dashboards.enabled) install them: a ConfigMap each, with
// Grafana's sidecar label, holding the file as it is; none from the chart
// by default.
func TestGrafanaDashboardsFromKustomizeAndTheChart(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "grafana", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		want[strings.TrimSuffix(name, ".json")+"-dashboard"] = string(data)
	}
	if len(want) != 2 {
		t.Fatalf("dashboards %v in config/grafana, want those of the etcd and the Redis clusters", files)
	}

	for install, objs := range map[string][]*unstructured.Unstructured{
		"kustomize": kustomizeOf(t, "config/grafana"),
		"helm":      helm(t, "grafana.dashboards.enabled=true"),
	} {
		got := map[string]string{}
		for _, cm := range byKind(objs, "ConfigMap") {
			if cm.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("%s: ConfigMap %s labels %v, want grafana_dashboard: \"1\"", install, cm.GetName(), cm.GetLabels())
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			for key, v := range data {
				name := strings.TrimSuffix(key, ".json") + "-dashboard"
				if !strings.HasSuffix(cm.GetName(), name) {
					t.Errorf("%s: ConfigMap %s holds %s", install, cm.GetName(), key)
				}
				got[name] = v
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: dashboards (-config/grafana +ConfigMaps):\n%s", install, diff)
		}
	}
	if cms := byKind(helm(t), "ConfigMap"); len(cms) != 0 {
		t.Errorf("the chart's defaults render ConfigMaps %v, want none", sortedKeys(cms))
	}
}
