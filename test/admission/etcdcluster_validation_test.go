package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestEtcdClusterAdmission checks that the sample applies unchanged, that
// bad sizes, versions, repositories and names are refused with the field
// named, and that a version change may only go to a later patch or the
// next minor (a CEL transition rule).
func TestEtcdClusterAdmission(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	sample := func(t *testing.T) *etcdv1beta2.EtcdCluster {
		e := &etcdv1beta2.EtcdCluster{}
		testenv.LoadSample(t, testenv.EtcdSample, e, ns)
		return e
	}

	t.Run("the sample applies unchanged, with the default repository", func(t *testing.T) {
		e := sample(t)
		if e.Spec.Size != 3 || e.Spec.Version != "3.2.13" {
			t.Fatalf("sample %+v, want size 3 and version 3.2.13", e.Spec)
		}
		if err := k8s.Create(ctx, e, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if e.Spec.Repository != etcdv1beta2.DefaultRepository {
			t.Errorf("repository %q, want the default %q", e.Spec.Repository, etcdv1beta2.DefaultRepository)
		}
	})

	creates := []struct {
		name   string
		mutate func(*etcdv1beta2.EtcdCluster)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"size 1", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 1 }, ""},
		{"size 9", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 9 }, ""},
		{"an even size", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 4 }, ""},
		{"hibernated", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Hibernate = true }, ""},
		{"size 0", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 0 }, "spec.size"},
		{"size 10", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 10 }, "spec.size"},
		{"a negative size", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = -3 }, "spec.size"},
		{"a version with a v", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Version = "v3.6.16" }, "spec.version"},
		{"a version of two parts", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Version = "3.6" }, "spec.version"},
		{"a version with a suffix", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Version = "3.6.0-rc.1" }, "spec.version"},
		{"a version with a leading zero", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Version = "3.06.1" }, "spec.version"},
		{"a repository with a space", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Repository = "quay.io/coreos etcd" }, "spec.repository"},
		{"a repository with a tag", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Repository = "quay.io/coreos/etcd:v3" }, ""},
		{"a name of 41 characters", func(e *etcdv1beta2.EtcdCluster) { e.Name = strings.Repeat("e", 41) }, "metadata.name"},
		{"a name with a dot", func(e *etcdv1beta2.EtcdCluster) { e.Name = "my.etcd" }, "metadata.name"},
		{"maintenance: empty", func(e *etcdv1beta2.EtcdCluster) { e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{} }, ""},
		{"maintenance: every field", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{CompactionRetention: &metav1.Duration{Duration: 5 * time.Minute},
				BackendQuota: ptr.To(resource.MustParse("32Mi")), Defragmentation: &etcdv1beta2.DefragmentationPolicy{
					MinInterval: &metav1.Duration{Duration: time.Minute}, FragmentedPercent: ptr.To[int32](30), MinSize: ptr.To(resource.MustParse("1Mi"))}}
		}, ""},
		{"maintenance: the largest quota the default claim holds", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("1792Mi"))}
		}, ""},
		{"maintenance: a quota beyond the default claim", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("1793Mi"))}
		}, "spec.maintenance.backendQuota must be at most half of spec.storage.size"},
		{"maintenance: the largest quota, on a claim that holds it", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Storage = &etcdv1beta2.Storage{Size: ptr.To(resource.MustParse("20Gi"))}
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(etcdv1beta2.MaxBackendQuota)}
		}, ""},
		{"maintenance: a quota beyond a small claim", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Storage = &etcdv1beta2.Storage{Size: ptr.To(resource.MustParse("1Gi"))}
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("257Mi"))}
		}, "spec.maintenance.backendQuota must be at most half of spec.storage.size"},
		{"maintenance: a quota beyond etcd's suggested maximum", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Storage = &etcdv1beta2.Storage{Size: ptr.To(resource.MustParse("64Gi"))}
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("9Gi"))}
		}, "spec.maintenance.backendQuota must be between 16Mi and 8Gi"},
		{"maintenance: a tiny quota", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("1Mi"))}
		}, "spec.maintenance.backendQuota must be between 16Mi and 8Gi"},
		{"maintenance: a retention of 10s", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{CompactionRetention: &metav1.Duration{Duration: 10 * time.Second}}
		}, "spec.maintenance.compactionRetention must be between 1m and 720h"},
		{"maintenance: a defragmentation every 10s", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{MinInterval: &metav1.Duration{Duration: 10 * time.Second}}}
		}, "spec.maintenance.defragmentation.minInterval must be between 1m and 8760h"},
		{"maintenance: fragmented 100%", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{FragmentedPercent: ptr.To[int32](100)}}
		}, "spec.maintenance.defragmentation.fragmentedPercent"},
		{"maintenance: a negative minimal size", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{MinSize: ptr.To(resource.MustParse("-1Mi"))}}
		}, "spec.maintenance.defragmentation.minSize must not be negative"},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			e := sample(t)
			tt.mutate(e)
			testenv.ExpectAdmission(t, k8s.Create(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}
	t.Run("a missing version", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": etcdv1beta2.GroupVersion.String(), "kind": "EtcdCluster",
			"metadata": map[string]any{"name": "no-version", "namespace": ns},
			"spec":     map[string]any{"size": int64(3)},
		}}
		testenv.ExpectAdmission(t, k8s.Create(ctx, u, client.DryRunAll), "spec.version")
	})
	t.Run("a size as a string", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": etcdv1beta2.GroupVersion.String(), "kind": "EtcdCluster",
			"metadata": map[string]any{"name": "string-size", "namespace": ns},
			"spec":     map[string]any{"size": "3", "version": "3.6.16"},
		}}
		testenv.ExpectAdmission(t, k8s.Create(ctx, u, client.DryRunAll), "spec.size")
	})

	// Version changes, from a stored 3.6.15.
	live := sample(t)
	live.Name = "upgrades"
	live.Spec.Version = "3.6.15"
	testenv.Create(t, k8s, live)
	updates := []struct {
		to      string
		wantErr string
	}{
		{"3.6.15", ""},
		{"3.6.16", ""},
		{"3.6.99", ""},
		{"3.7.0", ""},
		{"3.7.5", ""},
		{"3.6.14", "spec.version may only move"},
		{"3.5.21", "spec.version may only move"},
		{"3.8.0", "spec.version may only move"},
		{"4.0.0", "spec.version may only move"},
		{"2.6.15", "spec.version may only move"},
	}
	for _, tt := range updates {
		t.Run("version 3.6.15 to "+tt.to, func(t *testing.T) {
			e := live.DeepCopy()
			e.Spec.Version = tt.to
			testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}

	// From 3.5: to 3.6 only from 3.5.20 on (etcd issue 19557).
	for _, tt := range []struct{ from, to, wantErr string }{
		{"3.5.19", "3.6.0", "only from 3.5.20 or later"},
		{"3.5.0", "3.6.16", "only from 3.5.20 or later"},
		{"3.5.19", "3.5.21", ""},
		{"3.5.20", "3.6.0", ""},
		{"3.5.21", "3.6.16", ""},
	} {
		t.Run("version "+tt.from+" to "+tt.to, func(t *testing.T) {
			e := sample(t)
			e.Name = "from-" + strings.ReplaceAll(tt.from, ".", "-") + "-to-" + strings.ReplaceAll(tt.to, ".", "-")
			e.Spec.Version = tt.from
			testenv.Create(t, k8s, e)
			e.Spec.Version = tt.to
			testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}

	// In the middle of an upgrade (spec 3.7.0, the members' lowest version
	// still 3.6.16): the spec may go on to a later patch of its target, not
	// to a further minor the members cannot reach.
	mid := sample(t)
	mid.Name = "mid-upgrade"
	mid.Spec.Version = "3.6.16"
	testenv.Create(t, k8s, mid)
	mid.Spec.Version = "3.7.0"
	if err := k8s.Update(ctx, mid); err != nil {
		t.Fatal(err)
	}
	mid.Status.CurrentVersion = "3.6.16"
	if err := k8s.Status().Update(ctx, mid); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ to, wantErr string }{
		{"3.7.1", ""},
		{"3.8.0", "reachable in one step from the version the members run"},
	} {
		t.Run("version 3.7.0 to "+tt.to+" while the members run 3.6.16", func(t *testing.T) {
			e := mid.DeepCopy()
			e.Spec.Version = tt.to
			testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}
	t.Run("version 3.7.0 to 3.8.0 once the members run 3.7.0", func(t *testing.T) {
		e := mid.DeepCopy()
		e.Status.CurrentVersion = "3.7.0"
		if err := k8s.Status().Update(ctx, e); err != nil {
			t.Fatal(err)
		}
		e.Spec.Version = "3.8.0"
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "")
	})

	// The seed's sample (3.2.13), which the operator refused: nothing runs,
	// so any version may follow; without the refusal, the skip is refused.
	refused := sample(t)
	refused.Name = "refused"
	testenv.Create(t, k8s, refused)
	t.Run("version 3.2.13 to 3.6.16 before the operator refused it", func(t *testing.T) {
		e := refused.DeepCopy()
		e.Spec.Version = "3.6.16"
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "spec.version may only move")
	})
	t.Run("version 3.2.13 to 3.6.16 once the operator refused it", func(t *testing.T) {
		e := refused.DeepCopy()
		meta.SetStatusCondition(&e.Status.Conditions, metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionFalse,
			Reason: etcdv1beta2.ReasonVersionUnsupported, Message: "refused"})
		if err := k8s.Status().Update(ctx, e); err != nil {
			t.Fatal(err)
		}
		e.Spec.Version = "3.6.16"
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "")
	})

	t.Run("kubectl scale to 10 is refused", func(t *testing.T) {
		scale := &autoscalingv1.Scale{}
		if err := k8s.SubResource("scale").Get(ctx, live, scale); err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 3 {
			t.Errorf("scale subresource says %d replicas, want the spec's 3", scale.Spec.Replicas)
		}
		scale.Spec.Replicas = 10
		testenv.ExpectAdmission(t, k8s.SubResource("scale").Update(ctx, live, client.WithSubResourceBody(scale)), "spec.size")
	})
}

// TestEtcdClusterPodAndOptionsAdmission checks spec.pod's resources,
// labels, annotations and priority class, spec.etcdOptions and
// spec.storage: the operator's own labels, annotations and etcd flags are
// refused naming the field and the key or flag, and a claim size may grow
// but never shrink.
func TestEtcdClusterPodAndOptionsAdmission(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	sample := func(t *testing.T) *etcdv1beta2.EtcdCluster {
		e := &etcdv1beta2.EtcdCluster{}
		testenv.LoadSample(t, testenv.EtcdSample, e, ns)
		e.Spec.Version = "3.6.16"
		return e
	}
	pod := func(p etcdv1beta2.PodPolicy) func(*etcdv1beta2.EtcdCluster) {
		return func(e *etcdv1beta2.EtcdCluster) { e.Spec.Pod = &p }
	}
	options := func(o ...etcdv1beta2.EtcdOption) func(*etcdv1beta2.EtcdCluster) {
		return func(e *etcdv1beta2.EtcdCluster) { e.Spec.EtcdOptions = o }
	}
	size := func(s string) func(*etcdv1beta2.EtcdCluster) {
		return func(e *etcdv1beta2.EtcdCluster) {
			q := resource.MustParse(s)
			e.Spec.Storage = &etcdv1beta2.Storage{Size: &q}
		}
	}
	q := resource.MustParse
	labels := func(k string) func(*etcdv1beta2.EtcdCluster) {
		return pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{k: "x"}})
	}
	creates := []struct {
		name   string
		mutate func(*etcdv1beta2.EtcdCluster)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"resources with requests equal to limits", pod(etcdv1beta2.PodPolicy{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}}), ""},
		{"requests above the limits", pod(etcdv1beta2.PodPolicy{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}}), "spec.pod.resources.requests must not exceed"},
		{"a label of the user's", pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{"team": "storage", "app.kubernetes.io/part-of": "shop"}}), ""},
		{"the selector's name label", labels("app.kubernetes.io/name"), "spec.pod.labels: app.kubernetes.io/name is set by the operator"},
		{"the selector's instance label", pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{"app.kubernetes.io/instance": "x"}}), "spec.pod.labels: app.kubernetes.io/instance"},
		{"the managed-by label", pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{"app.kubernetes.io/managed-by": "me"}}), "spec.pod.labels: app.kubernetes.io/managed-by"},
		{"the TLS label", pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{"app-operator/tls": "true"}}), "spec.pod.labels: app-operator/tls"},
		{"the StatefulSet's pod-name label", labels("statefulset.kubernetes.io/pod-name"), "spec.pod.labels: statefulset.kubernetes.io/pod-name"},
		{"a label key that is no key", pod(etcdv1beta2.PodPolicy{Labels: map[string]placement.LabelValue{"a b": "x"}}), "spec.pod.labels keys must be label keys"},
		{"an annotation of the user's", pod(etcdv1beta2.PodPolicy{Annotations: map[string]string{"prometheus.io/scrape": "true"}}), ""},
		{"the trust annotation", pod(etcdv1beta2.PodPolicy{Annotations: map[string]string{"app-operator/tls-ca": "x"}}), "spec.pod.annotations: app-operator/tls-ca is set by the operator"},
		{"a priority class", pod(etcdv1beta2.PodPolicy{PriorityClassName: "system-cluster-critical"}), ""},
		{"a priority class that is no name", pod(etcdv1beta2.PodPolicy{PriorityClassName: "High Priority"}), "spec.pod.priorityClassName"},
		{"etcd options of the user's", options("--heartbeat-interval=200", "--election-timeout=2000", "--max-txn-ops=256", "--log-level=warn"), ""},
		{"the quota as an etcd option, which spec.maintenance sets", options("--quota-backend-bytes=1000"), "--quota-backend-bytes is set by the operator"},
		{"the compaction as an etcd option, which spec.maintenance sets", options("--auto-compaction-retention=1"), "--auto-compaction-retention is set by the operator"},
		{"an option that is no flag", options("heartbeat-interval=200"), "is not a flag of the form --name=value"},
		{"an option without a value", options("--heartbeat-interval"), "is not a flag of the form --name=value"},
		{"the member's name", options("--name=other"), "spec.etcdOptions: --name is set by the operator"},
		{"the data folder", options("--data-dir=/tmp"), "spec.etcdOptions: --data-dir is set by the operator"},
		{"the listen client URLs", options("--listen-client-urls=http://0.0.0.0:2379"), "spec.etcdOptions: --listen-client-urls"},
		{"the listen peer URLs", options("--listen-peer-urls=http://0.0.0.0:2380"), "spec.etcdOptions: --listen-peer-urls"},
		{"the advertised client URLs", options("--advertise-client-urls=http://x:2379"), "spec.etcdOptions: --advertise-client-urls"},
		{"the advertised peer URLs", options("--initial-advertise-peer-urls=http://x:2380"), "spec.etcdOptions: --initial-advertise-peer-urls"},
		{"the initial cluster", options("--initial-cluster=a=http://x:2380"), "spec.etcdOptions: --initial-cluster"},
		{"the initial cluster state", options("--initial-cluster-state=new"), "spec.etcdOptions: --initial-cluster-state"},
		{"the cluster token", options("--initial-cluster-token=t"), "spec.etcdOptions: --initial-cluster-token"},
		{"the metrics URLs", options("--listen-metrics-urls=http://0.0.0.0:2381"), "spec.etcdOptions: --listen-metrics-urls"},
		{"a server certificate", options("--cert-file=/x"), "spec.etcdOptions: --cert-file"},
		{"a peer key", options("--peer-key-file=/x"), "spec.etcdOptions: --peer-key-file"},
		{"a trusted CA", options("--trusted-ca-file=/x"), "spec.etcdOptions: --trusted-ca-file"},
		{"client certificate authentication", options("--client-cert-auth=false"), "spec.etcdOptions: --client-cert-auth"},
		{"automatic TLS", options("--peer-auto-tls=true"), "spec.etcdOptions: --peer-auto-tls"},
		{"skipping the peers' SAN check", options("--peer-skip-client-san-verification=false"), "spec.etcdOptions: --peer-skip-client-san-verification"},
		{"a configuration file", options("--config-file=/x"), "spec.etcdOptions: --config-file"},
		{"a new cluster forced", options("--force-new-cluster=true"), "spec.etcdOptions: --force-new-cluster"},
		{"discovery", options("--discovery-srv=example.com"), "spec.etcdOptions: --discovery-srv"},
		{"a claim size", size("8Gi"), ""},
		{"a claim size of zero", size("0"), "spec.storage.size must be positive"},
		{"a storage class that is no name", func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Storage = &etcdv1beta2.Storage{StorageClassName: "Fast SSD"}
		}, "spec.storage.storageClassName"},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			e := sample(t)
			tt.mutate(e)
			testenv.ExpectAdmission(t, k8s.Create(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}

	// Size changes, from a stored 8Gi, and from none (4Gi).
	sized := sample(t)
	sized.Name = "sized"
	size("8Gi")(sized)
	testenv.Create(t, k8s, sized)
	plain := sample(t)
	plain.Name = "plain"
	testenv.Create(t, k8s, plain)
	for _, tt := range []struct {
		name    string
		from    *etcdv1beta2.EtcdCluster
		mutate  func(*etcdv1beta2.EtcdCluster)
		wantErr string
	}{
		{"8Gi to 16Gi", sized, size("16Gi"), ""},
		{"8Gi to 8192Mi", sized, size("8192Mi"), ""},
		{"8Gi to 4Gi", sized, size("4Gi"), "spec.storage.size cannot shrink"},
		{"8Gi to left out (4Gi)", sized, func(e *etcdv1beta2.EtcdCluster) { e.Spec.Storage = nil }, "spec.storage.size cannot shrink"},
		{"left out (4Gi) to 5Gi", plain, size("5Gi"), ""},
		{"left out (4Gi) to 2Gi", plain, size("2Gi"), "spec.storage.size cannot shrink"},
		{"a storage class set later", plain, func(e *etcdv1beta2.EtcdCluster) {
			e.Spec.Storage = &etcdv1beta2.Storage{StorageClassName: "fast"}
		}, "spec.storage.storageClassName cannot change"},
	} {
		t.Run("storage "+tt.name, func(t *testing.T) {
			e := tt.from.DeepCopy()
			tt.mutate(e)
			testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), tt.wantErr)
		})
	}
}
