package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/api/placement"
	redislabsv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/kinds"
	"github.com/app-operator/app-operator/test/testenv"
)

// placementOf returns the placement of obj, a resource of one of the
// kinds, and the path of its fields: spec, or spec.pod for an EtcdCluster.
func placementOf(t *testing.T, obj client.Object) (*placement.Placement, string) {
	t.Helper()
	switch o := obj.(type) {
	case *appv1.AppService:
		return &o.Spec.Placement, "spec."
	case *appv1.WebService:
		return &o.Spec.Placement, "spec."
	case *customv1.MicroServiceDeploy:
		return &o.Spec.Placement, "spec."
	case *cachev1alpha1.Memcached:
		return &o.Spec.Placement, "spec."
	case *operatorv1.MyWeb:
		return &o.Spec.Placement, "spec."
	case *redislabsv1alpha1.RedisEnterpriseCluster:
		return &o.Spec.Placement, "spec."
	case *etcdv1beta2.EtcdCluster:
		if o.Spec.Pod == nil {
			o.Spec.Pod = &etcdv1beta2.PodPolicy{}
		}
		return &o.Spec.Pod.Placement, "spec.pod."
	case *etcdv1beta2.EtcdBackup:
		if o.Spec.Pod == nil {
			o.Spec.Pod = &etcdv1beta2.PodPolicy{}
		}
		return &o.Spec.Pod.Placement, "spec.pod."
	case *etcdv1beta2.EtcdRestore:
		if o.Spec.ClusterSpec.Pod == nil {
			o.Spec.ClusterSpec.Pod = &etcdv1beta2.PodPolicy{}
		}
		return &o.Spec.ClusterSpec.Pod.Placement, "spec.clusterSpec.pod."
	}
	t.Fatalf("no placement in %T", obj)
	return nil, ""
}

// TestPlacementAdmission checks, for every kind, that the node selector,
// tolerations and spread a user pins pods with are accepted, and that
// those a pod would refuse are refused with the field named.
func TestPlacementAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	tests := []struct {
		name   string
		mutate func(*placement.Placement)
		// field is the field the message names, under the placement's
		// path, and msg a fragment of the message; empty means accepted.
		field, msg string
	}{
		{"should accept a full placement", func(p *placement.Placement) {
			p.NodeSelector = map[string]placement.LabelValue{"disktype": "ssd", "example.com/pool": "db-1"}
			p.Tolerations = []placement.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				{Operator: corev1.TolerationOpExists},
				{Key: "spot", Value: "true"},
			}
			p.Spread = &placement.Spread{TopologyKey: "topology.kubernetes.io/zone", Required: true}
		}, "", ""},
		{"should accept an empty spread", func(p *placement.Placement) { p.Spread = &placement.Spread{} }, "", ""},
		{"should reject a topology key that is no label key", func(p *placement.Placement) {
			p.Spread = &placement.Spread{TopologyKey: "not a key"}
		}, "spread.topologyKey", "topologyKey must be a label key"},
		{"should reject a topology key with an empty prefix", func(p *placement.Placement) {
			p.Spread = &placement.Spread{TopologyKey: "/zone"}
		}, "spread.topologyKey", "topologyKey must be a label key"},
		{"should reject a toleration operator other than Exists and Equal", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "dedicated", Operator: "In", Value: "db"}}
		}, "tolerations[0].operator", "Unsupported value"},
		{"should reject an unknown toleration effect", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: "NoRun"}}
		}, "tolerations[0].effect", "Unsupported value"},
		{"should reject an empty toleration key with Equal", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Operator: corev1.TolerationOpEqual, Value: "db"}}
		}, "tolerations[0]", "the operator must be Exists when the key is empty"},
		{"should reject a toleration key that is no label key", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "a b", Operator: corev1.TolerationOpExists}}
		}, "tolerations[0].key", "must be a label key"},
		{"should reject a toleration value with Exists", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Value: "db"}}
		}, "tolerations[0]", "the value must be empty when the operator is Exists"},
		{"should reject a toleration value that is no label value", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "dedicated", Value: "d b"}}
		}, "tolerations[0].value", "should match"},
		{"should reject tolerationSeconds without NoExecute", func(p *placement.Placement) {
			p.Tolerations = []placement.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](30)}}
		}, "tolerations[0]", "tolerationSeconds needs the effect NoExecute"},
		{"should reject a node selector key that is no label key", func(p *placement.Placement) {
			p.NodeSelector = map[string]placement.LabelValue{"disk type": "ssd"}
		}, "nodeSelector", "nodeSelector keys must be label keys"},
		{"should reject a node selector value that is no label value", func(p *placement.Placement) {
			p.NodeSelector = map[string]placement.LabelValue{"disktype": "solid state"}
		}, "nodeSelector.disktype", "should match"},
	}
	for _, k := range kinds.All() {
		t.Run(k.GVK.Kind, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					obj := k.New()
					testenv.LoadSample(t, k.Sample, obj, ns)
					p, path := placementOf(t, obj)
					tt.mutate(p)
					want := ""
					if tt.field != "" {
						want = path + tt.field
					}
					err := k8s.Create(context.Background(), obj, client.DryRunAll)
					testenv.ExpectAdmission(t, err, want)
					if err != nil && !strings.Contains(err.Error(), tt.msg) {
						t.Errorf("error %q does not say %q", err, tt.msg)
					}
				})
			}
		})
	}
}
