package dashboards

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// update rewrites config/grafana/metrics.txt from the dashboards:
// `go test ./dashboards -update` (make dashboard-metrics).
var update = flag.Bool("update", false, "rewrite config/grafana/metrics.txt")

// grafanaDir holds the dashboards, from this package's directory.
var grafanaDir = filepath.Join("..", "..", "..", "config", "grafana")

// The dashboards of config/grafana pass the check, and metrics.txt lists
// the metrics they name (what the real-pods suite looks for in a real
// scrape).
func TestDashboards(t *testing.T) {
	got, err := List(grafanaDir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(grafanaDir, "metrics.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s is stale: run `make dashboard-metrics` and commit it. The dashboards name:\n%s", path, got)
	}
	for _, dashboard := range []string{"etcd-clusters.json", "redis-clusters.json"} {
		if !strings.Contains(got, dashboard+" app_operator_") {
			t.Errorf("%s names no metric of the operator:\n%s", dashboard, got)
		}
	}
}

// good is a dashboard that passes, which the cases below break one way
// each.
const good = `{
  "uid": "u", "title": "t", "schemaVersion": 39,
  "templating": {"list": [
    {"type": "datasource", "name": "datasource", "query": "prometheus"},
    {"type": "query", "name": "namespace", "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "query": {"query": "label_values(app_operator_etcdcluster_members, namespace)"}},
    {"type": "query", "name": "cluster", "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "query": "label_values(app_operator_etcdcluster_members{namespace=\"$namespace\"}, name)"}
  ]},
  "panels": [
    {"id": 1, "type": "row", "title": "r", "gridPos": {}},
    {"id": 2, "type": "timeseries", "title": "p", "gridPos": {},
     "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "targets": [
       {"refId": "A", "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "expr": "histogram_quantile(0.99, sum by (le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{namespace=\"$namespace\", etcd_cluster=~\"${cluster:regex}\"}[$__rate_interval]))) > 0 and sum without (pod) (app_operator_etcdcluster_has_leader)"},
       {"refId": "B", "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "legendFormat": "{{ kind }}", "expr": "time() - app_operator_backup_last_success_timestamp_seconds{kind=\"EtcdBackup\"} > on (name) group_left app_operator_etcdcluster_has_leader"}
     ]}
  ]
}`

func TestCheck(t *testing.T) {
	got, err := Check([]byte(good))
	if err != nil {
		t.Fatalf("the good dashboard: %v", err)
	}
	want := []Metric{
		{"app_operator_backup_last_success_timestamp_seconds", []string{"kind", "name"}},
		{"app_operator_etcdcluster_has_leader", []string{"kind", "name"}},
		{"app_operator_etcdcluster_members", []string{"name", "namespace"}},
		{"etcd_disk_wal_fsync_duration_seconds_bucket", []string{"etcd_cluster", "le", "namespace"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		// edit breaks the good dashboard.
		edit func(d map[string]any)
		// want is in the error.
		want string
	}{
		{"a query that does not parse", func(d map[string]any) { target(d, 0)["expr"] = "rate(up[5m]" }, "unclosed left parenthesis"},
		{"a query of an unknown variable", func(d map[string]any) { target(d, 0)["expr"] = `up{pod="$pod"}` }, `uses [$pod]`},
		{"a query of the data source variable", func(d map[string]any) { target(d, 0)["expr"] = `up{x="$datasource"}` }, `uses [$datasource]`},
		{"a selector with no metric name", func(d map[string]any) { target(d, 0)["expr"] = `{job="x"}` }, "names no metric"},
		{"a query with no expr", func(d map[string]any) { target(d, 0)["expr"] = " " }, "no expr"},
		{"a query with no data source", func(d map[string]any) { delete(target(d, 0), "datasource") }, "query A: data source <nil>"},
		{"two queries of one refId", func(d map[string]any) { target(d, 1)["refId"] = "A" }, "no refId, or one another query"},
		{"a panel with no data source", func(d map[string]any) { delete(panel(d, 1), "datasource") }, `panel 2 "p": data source <nil>`},
		{"a panel of another data source", func(d map[string]any) {
			panel(d, 1)["datasource"] = map[string]any{"type": "loki", "uid": "${datasource}"}
		}, "want {type: prometheus"},
		{"a panel with no title", func(d map[string]any) { panel(d, 1)["title"] = "" }, "no title"},
		{"a panel with no queries", func(d map[string]any) { panel(d, 1)["targets"] = []any{} }, "no queries"},
		{"two panels of one id", func(d map[string]any) { panel(d, 1)["id"] = 1 }, "one another panel has"},
		{"no data source variable", func(d map[string]any) {
			variable(d, 0)["name"] = "ds"
		}, `no template variable "datasource"`},
		{"a data source variable of another type", func(d map[string]any) { variable(d, 0)["query"] = "loki" }, "of type prometheus wanted"},
		{"a variable query that is not label_values", func(d map[string]any) {
			variable(d, 1)["query"] = map[string]any{"query": "query_result(up)"}
		}, "is not label_values(selector, label)"},
		{"a variable query that does not parse", func(d map[string]any) {
			variable(d, 2)["query"] = `label_values(up{a=}, name)`
		}, "variable cluster"},
		{"no panels", func(d map[string]any) { d["panels"] = []any{} }, "no panels"},
		{"no uid", func(d map[string]any) { delete(d, "uid") }, "needs a uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal([]byte(good), &d); err != nil {
				t.Fatal(err)
			}
			tc.edit(d)
			data, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Check(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func panel(d map[string]any, i int) map[string]any {
	return d["panels"].([]any)[i].(map[string]any)
}

func target(d map[string]any, i int) map[string]any {
	return panel(d, 1)["targets"].([]any)[i].(map[string]any)
}

func variable(d map[string]any, i int) map[string]any {
	return d["templating"].(map[string]any)["list"].([]any)[i].(map[string]any)
}
