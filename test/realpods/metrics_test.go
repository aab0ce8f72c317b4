package realpods

import (
	"context"
	"fmt"
	"slices"
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
