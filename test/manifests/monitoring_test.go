package manifests

import (
	stdcmp "cmp"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// strictly decodes o into out, failing on a field the Prometheus
// Operator's API does not have.
func strictly(t *testing.T, o *unstructured.Unstructured, out any) {
	t.Helper()
	data, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		t.Fatalf("%s %s is not a valid %T: %v", o.GetKind(), o.GetName(), out, err)
	}
}

// The Prometheus Operator objects both installs ship are valid objects of
// its API (v0.93), field for field.
func TestMonitoringObjectsAreValid(t *testing.T) {
	objs := append(kustomizeOf(t, "config/prometheus"),
		helm(t, "serviceMonitor.enabled=true", "prometheusRule.enabled=true", "etcdPodMonitor.enabled=true")...)
	seen := map[string]int{}
	for _, o := range objs {
		var out any
		switch o.GetKind() {
		case "ServiceMonitor":
			out = &monitoringv1.ServiceMonitor{}
		case "PodMonitor":
			out = &monitoringv1.PodMonitor{}
		case "PrometheusRule":
			out = &monitoringv1.PrometheusRule{}
		default:
			continue
		}
		strictly(t, o, out)
		seen[o.GetKind()]++
	}
	if want := map[string]int{"ServiceMonitor": 2, "PodMonitor": 2, "PrometheusRule": 2}; !cmp.Equal(seen, want) {
		t.Errorf("monitoring objects %v, want %v (each from kustomize and from the chart)", seen, want)
	}
}

// The etcd members' PodMonitor selects every member pod an EtcdCluster
// gets, and scrapes a port the etcd container has; the chart's is the
// same as kustomize's, and only with etcdPodMonitor.enabled.
func TestEtcdPodMonitorSelectsTheMembersPort(t *testing.T) {
	if got := byKind(helm(t), "PodMonitor"); len(got) > 0 {
		t.Fatalf("the chart renders PodMonitors %v by default; want them only with etcdPodMonitor.enabled", sortedKeys(got))
	}
	k := bySuffix(t, kustomizeOf(t, "config/prometheus"), "PodMonitor", "etcd-members")
	h := bySuffix(t, helm(t, "etcdPodMonitor.enabled=true"), "PodMonitor", "etcd-members")
	if diff := cmp.Diff(k.Object["spec"], h.Object["spec"]); diff != "" {
		t.Errorf("PodMonitor spec (-kustomize +helm):\n%s", diff)
	}
	pm := &monitoringv1.PodMonitor{}
	strictly(t, k, pm)
	if !pm.Spec.NamespaceSelector.Any {
		t.Errorf("namespaceSelector %+v, want every namespace", pm.Spec.NamespaceSelector)
	}
	selector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "u"}
	plain := &etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}
	withTLS := plain.DeepCopy()
	withTLS.TLS = &etcdv1beta2.TLSPolicy{Static: &etcdv1beta2.StaticTLS{
		Member: &etcdv1beta2.MemberSecret{PeerSecret: "p", ServerSecret: "s"}, OperatorSecret: "o"}}
	// Each member pod is scraped through exactly one endpoint, on the port
	// that serves plain HTTP: the client port, or with TLS the metrics
	// port.
	for _, tt := range []struct {
		name string
		spec *etcdv1beta2.EtcdClusterSpec
		want string
	}{{"without TLS", plain, "client"}, {"with TLS", withTLS, "metrics"}} {
		sts := etcdcluster.Build(owner, tt.spec, etcdcluster.FromStatus("example", nil)).StatefulSet
		podLabels := sts.Spec.Template.Labels
		if !selector.Matches(labels.Set(podLabels)) {
			t.Errorf("%s: the PodMonitor's selector %s does not select the member pods, labelled %v", tt.name, selector, podLabels)
		}
		ports := map[string]int32{}
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				ports[*p.Name] = *p.ContainerPort
			}
		}
		var scraped []string
		for _, e := range pm.Spec.PodMetricsEndpoints {
			port := ptr.Deref(e.Port, "")
			if e.Path != "/metrics" || e.Scheme == nil || *e.Scheme != "http" {
				t.Errorf("endpoint %q scrapes %v %s, want http /metrics", port, e.Scheme, e.Path)
			}
			if ports[port] != 0 && !dropped(e.RelabelConfigs, podLabels) {
				scraped = append(scraped, port)
			}
		}
		if len(scraped) != 1 || scraped[0] != tt.want {
			t.Errorf("%s: the member pods (ports %v, labels %v) are scraped on %v, want %s alone", tt.name, ports, podLabels, scraped, tt.want)
		}
	}
}

// dropped reports whether a drop rule of relabelings, on a pod label,
// drops a pod labelled podLabels.
func dropped(relabelings []monitoringv1.RelabelConfig, podLabels map[string]string) bool {
	for _, r := range relabelings {
		if r.Action != "drop" || len(r.SourceLabels) != 1 {
			continue
		}
		for k, v := range podLabels {
			meta := "__meta_kubernetes_pod_label_" + strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '_'
			}, k)
			if string(r.SourceLabels[0]) == meta && regexp.MustCompile("^(?:"+stdcmp.Or(r.Regex, "(.*)")+")$").MatchString(v) {
				return true
			}
		}
	}
	return false
}
