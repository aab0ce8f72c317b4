package realpods

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// dashboardMetric is a metric a dashboard names, and the labels its
// queries read of it (matched on, grouped by, shown in a legend).
type dashboardMetric struct {
	name   string
	labels []string
}

// dashboardMetrics reads config/grafana/metrics.txt, the metrics each
// Grafana dashboard's queries name and the labels they read, as
// Prometheus's PromQL parser reads the queries (make dashboard-metrics
// writes it; make test-dashboards fails when it is stale), and returns
// those of dashboard.
func dashboardMetrics(t *testing.T, dashboard string) []dashboardMetric {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "config", "grafana", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dashboardMetric
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == dashboard {
			out = append(out, dashboardMetric{name: fields[1], labels: fields[2:]})
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("config/grafana/metrics.txt names no metric of %s", dashboard)
	}
	return out
}

// seriesLabels adds to series, by the name of each series of families
// that keep takes (every series when nil), as Prometheus stores it (a
// histogram's _bucket, _sum and _count, a summary's _sum and _count
// beside its quantiles), the labels it carries, and extra: those the
// scrape adds.
func seriesLabels(series map[string]map[string]bool, families map[string]*dto.MetricFamily, keep func(*dto.Metric) bool, extra ...string) {
	add := func(name string, m *dto.Metric, more ...string) {
		labels := series[name]
		if labels == nil {
			labels = map[string]bool{}
			series[name] = labels
		}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = true
		}
		for _, l := range append(more, extra...) {
			labels[l] = true
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m)
				add(name+"_count", m)
			default:
				add(name, m)
			}
		}
	}
}

// missingMetrics returns, sorted, the metrics of want that series lacks,
// and those it has without a label want reads of them, as name{label}.
func missingMetrics(want []dashboardMetric, series map[string]map[string]bool) []string {
	var out []string
	for _, m := range want {
		labels, ok := series[m.name]
		if !ok {
			out = append(out, m.name)
			continue
		}
		for _, l := range m.labels {
			if !labels[l] {
				out = append(out, m.name+"{"+l+"}")
			}
		}
	}
	slices.Sort(out)
	return out
}

// inNamespace keeps the series labelled namespace ns: the operators' own
// metrics of the clusters in ns.
func inNamespace(ns string) func(*dto.Metric) bool {
	return func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "namespace" {
				return l.GetValue() == ns
			}
		}
		return false
	}
}

// podMonitorLabels are the labels the Prometheus Operator gives each
// series a PodMonitor scrapes (its target's), and etcd_cluster, which the
// members' PodMonitor (config/prometheus/etcd-monitor.yaml) adds.
var podMonitorLabels = []string{"namespace", "pod", "container", "endpoint", "job", "instance", "etcd_cluster"}

// checkDashboardMetrics waits for every metric the dashboard names to be
// in a real scrape, with every label the dashboard reads of it: the
// operators' metrics of the clusters in namespace ns (the registry their
// metrics endpoint serves; the operator's ServiceMonitor honours their
// labels), and each page of memberPages (an etcd member's own /metrics,
// with the labels the members' PodMonitor adds).
func checkDashboardMetrics(t *testing.T, dashboard, ns string, memberPages ...string) {
	t.Helper()
	want := dashboardMetrics(t, dashboard)
	var series map[string]map[string]bool
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		series = map[string]map[string]bool{}
		seriesLabels(series, testenv.MetricFamilies(t, ctrlmetrics.Registry), inNamespace(ns))
		for _, url := range memberPages {
			families, err := scrape(url)
			if err != nil {
				return false, err.Error()
			}
			seriesLabels(series, families, nil, podMonitorLabels...)
		}
		missing := missingMetrics(want, series)
		return len(missing) == 0, fmt.Sprintf("%s names metrics, or labels of them, no scrape returned: %v", dashboard, missing)
	})
	t.Logf("%s: all %d metrics it names, with the labels it reads, are in a scrape of the operator and %d member pages (%d series names)",
		dashboard, len(want), len(memberPages), len(series))
}

// scrape reads the metrics page at url.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return families, nil
}

// etcdMetricsPages are the URLs of the metrics pages of e's members: at
// /metrics on the client port, or the plain metrics port with TLS (what
// the members' PodMonitor scrapes).
func etcdMetricsPages(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		t.Fatal(err)
	}
	port := etcdcluster.ClientPort
	if e.Spec.TLSEnabled() {
		port = etcdcluster.MetricsPort
	}
	out := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))+"/metrics")
	}
	if len(out) == 0 {
		t.Fatalf("no member pod of %s", e.Name)
	}
	return out
}
