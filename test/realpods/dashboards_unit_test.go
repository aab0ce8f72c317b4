package realpods

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The series names a scrape gives, as Prometheus stores them, and which
// metrics a dashboard names that they lack.
func TestSeriesNamesAndMissingMetrics(t *testing.T) {
	const page = `# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 1
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} 2
etcd_disk_wal_fsync_duration_seconds_sum 0.01
etcd_disk_wal_fsync_duration_seconds_count 2
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 1
rpc_seconds_sum 3
rpc_seconds_count 2
# TYPE etcd_server_leader_changes_seen_total counter
etcd_server_leader_changes_seen_total 1
# TYPE app_operator_etcdcluster_members gauge
app_operator_etcdcluster_members{namespace="a",name="x"} 3
# TYPE app_operator_etcdcluster_learners gauge
app_operator_etcdcluster_learners{namespace="b",name="y"} 0
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		keep func(*dto.Metric) bool
		want []string
		// missing is what a dashboard naming every metric of want plus
		// these lacks.
		missing []string
	}{
		{"every series", nil, []string{
			"app_operator_etcdcluster_learners", "app_operator_etcdcluster_members",
			"etcd_disk_wal_fsync_duration_seconds_bucket", "etcd_disk_wal_fsync_duration_seconds_count", "etcd_disk_wal_fsync_duration_seconds_sum",
			"etcd_server_leader_changes_seen_total", "rpc_seconds", "rpc_seconds_count", "rpc_seconds_sum",
		}, []string{"etcd_disk_wal_fsync_duration_seconds", "etcd_server_leader_changes_seen"}},
		{"the operator's series of namespace a", inNamespace("a"), []string{"app_operator_etcdcluster_members"},
			[]string{"app_operator_etcdcluster_learners", "etcd_server_leader_changes_seen_total"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := map[string]bool{}
			seriesNames(names, families, tc.keep)
			got := make([]string, 0, len(names))
			for n := range names {
				got = append(got, n)
			}
			if diff := cmp.Diff(tc.want, got, cmpSorted); diff != "" {
				t.Errorf("series names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.missing, missingMetrics(append(tc.want, tc.missing...), names)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpSorted = cmp.Transformer("sorted", func(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
})
