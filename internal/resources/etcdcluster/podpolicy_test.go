package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestStatefulSetTakesThePodPolicyAndStorage(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
	q := resource.MustParse
	small := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: q("50m"), corev1.ResourceMemory: q("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: q("64Mi")},
	}
	eight, two := q("8Gi"), q("2Gi")
	tests := []struct {
		name  string
		pod   *etcdv1beta2.PodPolicy
		store *etcdv1beta2.Storage
		// live is the live claim template's size; nil: no StatefulSet yet.
		live          *resource.Quantity
		wantResources corev1.ResourceRequirements
		wantLabels    map[string]string // besides the operator's
		wantAnns      map[string]string
		wantPriority  string
		wantSize      string
		wantClass     string
	}{
		{name: "defaults: Guaranteed, 4Gi on the default class", wantResources: DefaultResources, wantSize: "4Gi"},
		{name: "resources, labels, annotations, priority class",
			pod: &etcdv1beta2.PodPolicy{Resources: &small, Labels: map[string]placement.LabelValue{"team": "db"},
				Annotations: map[string]string{"example.com/note": "x"}, PriorityClassName: "high"},
			wantResources: small, wantLabels: map[string]string{"team": "db"}, wantAnns: map[string]string{"example.com/note": "x"},
			wantPriority: "high", wantSize: "4Gi"},
		{name: "a size and class for a new cluster", store: &etcdv1beta2.Storage{Size: &eight, StorageClassName: "expandable"},
			wantResources: DefaultResources, wantSize: "8Gi", wantClass: "expandable"},
		{name: "a larger size keeps the live template's", store: &etcdv1beta2.Storage{Size: &eight}, live: &two,
			wantResources: DefaultResources, wantSize: "2Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(3, "3.6.16")
			s.Pod, s.Storage = tt.pod, tt.store
			m := FromStatus(owner.Name, nil)
			m.ClaimSize = tt.live
			sts := Build(owner, s, m).StatefulSet
			tmpl := sts.Spec.Template
			c := tmpl.Spec.Containers[0]
			got := corev1.ResourceRequirements{Requests: *c.Resources.Requests}
			if c.Resources.Limits != nil {
				got.Limits = *c.Resources.Limits
			}
			if !equality.Semantic.DeepEqual(got, tt.wantResources) {
				t.Errorf("resources %v, want %v", got, tt.wantResources)
			}
			for k, v := range Selector(owner.Name) {
				if tmpl.Labels[k] != v {
					t.Errorf("pod label %s=%q, want the selector's %q", k, tmpl.Labels[k], v)
				}
			}
			for k, v := range tt.wantLabels {
				if tmpl.Labels[k] != v {
					t.Errorf("pod label %s=%q, want %q", k, tmpl.Labels[k], v)
				}
			}
			for k, v := range tt.wantAnns {
				if tmpl.Annotations[k] != v {
					t.Errorf("pod annotation %s=%q, want %q", k, tmpl.Annotations[k], v)
				}
			}
			if p := tmpl.Spec.PriorityClassName; (p == nil && tt.wantPriority != "") || (p != nil && *p != tt.wantPriority) {
				t.Errorf("priority class %v, want %q", p, tt.wantPriority)
			}
			claim := sts.Spec.VolumeClaimTemplates[0].Spec
			if size := (*claim.Resources.Requests)[corev1.ResourceStorage]; size.Cmp(q(tt.wantSize)) != 0 {
				t.Errorf("claim size %s, want %s", size.String(), tt.wantSize)
			}
			if cl := claim.StorageClassName; (cl == nil && tt.wantClass != "") || (cl != nil && *cl != tt.wantClass) {
				t.Errorf("claim class %v, want %q", cl, tt.wantClass)
			}
		})
	}
}

func TestConfigFileTakesTheEtcdOptions(t *testing.T) {
	c := Config{Name: "example-0", DataDir: DataDir + "/data", InitialClusterState: ClusterStateNew}
	tests := []struct {
		name    string
		options []etcdv1beta2.EtcdOption
		want    map[string]any
	}{
		{name: "none: the file as it was", want: map[string]any{"name": "example-0", "initial-cluster-state": "new"}},
		{name: "a number, a bool, a string",
			options: []etcdv1beta2.EtcdOption{"--heartbeat-interval=200", "--enable-pprof=true", "--log-level=warn"},
			want:    map[string]any{"heartbeat-interval": float64(200), "enable-pprof": true, "log-level": "warn", "name": "example-0"}},
		{name: "a setting etcd reads as a string stays one", options: []etcdv1beta2.EtcdOption{"--auto-compaction-retention=1"},
			want: map[string]any{"auto-compaction-retention": "1"}},
		{name: "a value with an equals sign", options: []etcdv1beta2.EtcdOption{"--log-outputs=a=b"}, want: map[string]any{"log-outputs": "a=b"}},
		{name: "a setting of the operator's is never overridden", options: []etcdv1beta2.EtcdOption{"--name=other", "--data-dir=/tmp"},
			want: map[string]any{"name": "example-0", "data-dir": DataDir + "/data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := ConfigFile(c, tt.options)
			got := map[string]any{}
			if err := yaml.Unmarshal([]byte(file), &got); err != nil {
				t.Fatalf("%v\n%s", err, file)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %#v, want %#v\n%s", k, got[k], v, file)
				}
			}
		})
	}
	if plain, _ := yaml.Marshal(c); ConfigFile(c, nil) != string(plain) {
		t.Errorf("without options the file changed:\n%s", ConfigFile(c, nil))
	}
}
