package realpods

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/app-operator/app-operator/test/testenv"
)

// clusterGauges scrapes the metrics page of the operators this process
// runs (controller-runtime's registry, which a manager's metrics endpoint
// serves) and returns the gauges of the cluster at key, by metric name,
// with the replica after a slash for a gauge of each replica.
func clusterGauges(t *testing.T, key client.ObjectKey) map[string]float64 {
	t.Helper()
	families := testenv.MetricFamilies(t, ctrlmetrics.Registry)
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != key.Namespace || labels["name"] != key.Name {
				continue
			}
			series := name
			if r := labels["replica"]; r != "" {
				series += "/" + r
			}
			out[series] = m.GetGauge().GetValue()
		}
	}
	return out
}

// waitGauges waits for the gauges of the cluster at key to be want.
func waitGauges(t *testing.T, key client.ObjectKey, want map[string]float64, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		diff := cmp.Diff(want, clusterGauges(t, key))
		return diff == "", fmt.Sprintf("gauges of %s (-want +got):\n%s", key, diff)
	})
}

// waitEventReasons waits for events of each reason to have been recorded
// about the resource of kind at key.
func waitEventReasons(t *testing.T, c client.Client, kind string, key client.ObjectKey, reasons ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		events := &eventsv1.EventList{}
		if err := c.List(context.Background(), events, client.InNamespace(key.Namespace)); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range events.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == key.Name {
				got = append(got, e.Reason)
			}
		}
		for _, r := range reasons {
			if !slices.Contains(got, r) {
				return false, fmt.Sprintf("events of %s %s: %v, want %v among them", kind, key, got, reasons)
			}
		}
		return true, ""
	})
}

// The per-node metrics of a Redis cluster on real pods, from a scrape of
// the operator's registry: every node up, the primary the status names
// said as one, memory used within a limit, commands counted, and each
// replica's acknowledgement lag, all from the INFO the passes read.
func TestRedisNodeMetricsFromARealScrape(t *testing.T) {
	_, _, r := startCell(t, "nodemetrics", true)
	r.refresh()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		got := nodeMetrics(t, client.ObjectKeyFromObject(r.rec))
		var missing []string
		for _, n := range r.rec.Status.Nodes {
			m := got[n.Name]
			primary := 0.0
			if n.Name == r.rec.Status.Primary {
				primary = 1
			}
			switch {
			case m["up"] != 1:
				missing = append(missing, n.Name+": not up")
			case m["primary"] != primary:
				missing = append(missing, fmt.Sprintf("%s: primary %v, want %v", n.Name, m["primary"], primary))
			case m["memory_used_bytes"] <= 0 || m["memory_max_bytes"] <= 0 || m["memory_used_bytes"] >= m["memory_max_bytes"]:
				missing = append(missing, fmt.Sprintf("%s: memory used %v of %v", n.Name, m["memory_used_bytes"], m["memory_max_bytes"]))
			case m["commands_processed_total"] <= 0 || m["connected_clients"] <= 0:
				missing = append(missing, fmt.Sprintf("%s: %v commands, %v clients", n.Name, m["commands_processed_total"], m["connected_clients"]))
			case m["aof_enabled"] != 1 || m["aof_last_write_failed"] != 0 || m["last_save_failed"] != 0:
				missing = append(missing, fmt.Sprintf("%s: persistence %v", n.Name, m))
			}
			if _, ok := m["replication_lag_seconds"]; ok == (primary == 1) {
				missing = append(missing, fmt.Sprintf("%s (primary %v): replication lag %v", n.Name, primary, m["replication_lag_seconds"]))
			}
		}
		return len(r.rec.Status.Nodes) == 3 && len(missing) == 0, fmt.Sprintf("node metrics %v: %v", got, missing)
	})
}

// nodeMetrics scrapes the operators' registry and returns the
// app_operator_redis_node_* metrics of the cluster at key, by node, by
// name without the prefix.
func nodeMetrics(t *testing.T, key client.ObjectKey) map[string]map[string]float64 {
	t.Helper()
	out := map[string]map[string]float64{}
	for name, f := range testenv.MetricFamilies(t, ctrlmetrics.Registry) {
		short, ok := strings.CutPrefix(name, "app_operator_redis_node_")
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != key.Namespace || labels["name"] != key.Name {
				continue
			}
			if out[labels["node"]] == nil {
				out[labels["node"]] = map[string]float64{}
			}
			out[labels["node"]][short] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}
