package manifests

import (
	"encoding/json"
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
	spec := &etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}
	sts := etcdcluster.Build(owner, spec, etcdcluster.FromStatus("example", nil)).StatefulSet
	if !selector.Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("the PodMonitor's selector %s does not select the member pods, labelled %v", selector, sts.Spec.Template.Labels)
	}
	ports := map[string]int32{}
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			ports[*p.Name] = *p.ContainerPort
		}
	}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if port := ptr.Deref(e.Port, ""); ports[port] == 0 || e.Path != "/metrics" {
			t.Errorf("the PodMonitor scrapes port %q at %s; the member container's ports are %v", port, e.Path, ports)
		}
	}
}
