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

// dashboardMetrics reads config/grafana/metrics.txt, the metrics each
// Grafana dashboard's queries name as Prometheus's PromQL parser reads
// them (make dashboard-metrics writes it; make test-dashboards fails when
// it is stale), and returns those of dashboard.
func dashboardMetrics(t *testing.T, dashboard string) []string {
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
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if name, ok := strings.CutPrefix(s.Text(), dashboard+" "); ok {
			out = append(out, name)
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

// seriesNames adds to names the names of the series of families that
// keep takes (every series when nil), as Prometheus stores them: a
// histogram's _bucket, _sum and _count, a summary's _sum and _count
// beside its quantiles.
func seriesNames(names map[string]bool, families map[string]*dto.MetricFamily, keep func(*dto.Metric) bool) {
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
			case dto.MetricType_SUMMARY:
				names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
			default:
				names[name] = true
			}
		}
	}
}

// missingMetrics returns, sorted, the metrics of want that names lacks.
func missingMetrics(want []string, names map[string]bool) []string {
	var out []string
	for _, n := range want {
		if !names[n] {
			out = append(out, n)
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

// checkDashboardMetrics waits for every metric the dashboard names to be
// in a real scrape: the operators' metrics of the clusters in namespace ns
// (the registry their metrics endpoint serves), and each page of
// memberPages (an etcd member's own /metrics, what the members' PodMonitor
// scrapes).
func checkDashboardMetrics(t *testing.T, dashboard, ns string, memberPages ...string) {
	t.Helper()
	want := dashboardMetrics(t, dashboard)
	var names map[string]bool
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		names = map[string]bool{}
		seriesNames(names, testenv.MetricFamilies(t, ctrlmetrics.Registry), inNamespace(ns))
		for _, url := range memberPages {
			families, err := scrape(url)
			if err != nil {
				return false, err.Error()
			}
			seriesNames(names, families, nil)
		}
		missing := missingMetrics(want, names)
		return len(missing) == 0, fmt.Sprintf("%s names metrics no scrape returned: %v", dashboard, missing)
	})
	t.Logf("%s: all %d metrics it names are in a scrape of the operator and %d member pages (%d series names)", dashboard, len(want), len(memberPages), len(names))
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
