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

// The series a scrape gives, by name as Prometheus stores them, with
// their labels; and which metrics, or labels of them, a dashboard reads
// that they lack.
func TestSeriesLabelsAndMissingMetrics(t *testing.T) {
	const page = `# TYPE etcd_network_peer_round_trip_time_seconds histogram
etcd_network_peer_round_trip_time_seconds_bucket{To="a1",le="0.001"} 1
etcd_network_peer_round_trip_time_seconds_bucket{To="a1",le="+Inf"} 2
etcd_network_peer_round_trip_time_seconds_sum{To="a1"} 0.01
etcd_network_peer_round_trip_time_seconds_count{To="a1"} 2
# TYPE rpc_seconds summary
rpc_seconds{quantile="0.5"} 1
rpc_seconds_sum 3
rpc_seconds_count 2
# TYPE etcd_server_leader_changes_seen_total counter
etcd_server_leader_changes_seen_total 1
# TYPE app_operator_redis_node_up gauge
app_operator_redis_node_up{namespace="a",name="x",node="x-0"} 1
# TYPE app_operator_etcdcluster_learners gauge
app_operator_etcdcluster_learners{namespace="b",name="y"} 0
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		keep  func(*dto.Metric) bool
		extra []string
		want  map[string][]string
		// read is what a dashboard reads; missing what of it the series
		// lack.
		read    []dashboardMetric
		missing []string
	}{
		{
			name: "every series, as a PodMonitor labels them", extra: []string{"pod"},
			want: map[string][]string{
				"app_operator_etcdcluster_learners":                {"name", "namespace", "pod"},
				"app_operator_redis_node_up":                       {"name", "namespace", "node", "pod"},
				"etcd_network_peer_round_trip_time_seconds_bucket": {"To", "le", "pod"},
				"etcd_network_peer_round_trip_time_seconds_count":  {"To", "pod"},
				"etcd_network_peer_round_trip_time_seconds_sum":    {"To", "pod"},
				"etcd_server_leader_changes_seen_total":            {"pod"},
				"rpc_seconds":                                      {"pod", "quantile"},
				"rpc_seconds_count":                                {"pod"},
				"rpc_seconds_sum":                                  {"pod"},
			},
			read: []dashboardMetric{
				{"etcd_network_peer_round_trip_time_seconds_bucket", []string{"To", "le", "pod"}},
				{"etcd_network_peer_round_trip_time_seconds_sum", []string{"le", "From"}},
				{"etcd_network_peer_round_trip_time_seconds", nil},
				{"etcd_server_leader_changes_seen", nil},
				{"rpc_seconds", []string{"quantile"}},
			},
			missing: []string{
				"etcd_network_peer_round_trip_time_seconds",
				"etcd_network_peer_round_trip_time_seconds_sum{From}",
				"etcd_network_peer_round_trip_time_seconds_sum{le}",
				"etcd_server_leader_changes_seen",
			},
		},
		{
			name: "the operator's series of namespace a", keep: inNamespace("a"),
			want: map[string][]string{"app_operator_redis_node_up": {"name", "namespace", "node"}},
			read: []dashboardMetric{
				{"app_operator_redis_node_up", []string{"namespace", "name", "node"}},
				{"app_operator_etcdcluster_learners", []string{"namespace"}},
				{"app_operator_redis_node_primary", []string{"node"}},
			},
			missing: []string{"app_operator_etcdcluster_learners", "app_operator_redis_node_primary"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := map[string]map[string]bool{}
			seriesLabels(series, families, tc.keep, tc.extra...)
			got := map[string][]string{}
			for name, labels := range series {
				for l := range labels {
					got[name] = append(got[name], l)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpSorted); diff != "" {
				t.Errorf("series labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.missing, missingMetrics(tc.read, series)); diff != "" {
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
