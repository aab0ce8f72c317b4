package etcdcluster

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestBuildFollowsTheRecordedMembership(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
	s := spec(3, "3.6.16")
	const (
		url0 = "example-0=http://example-0.example.ns.svc:2380"
		url1 = "example-1=http://example-1.example.ns.svc:2380"
		url2 = "example-2=http://example-2.example.ns.svc:2380"
	)
	// file is what a member's start-up file says.
	type file struct{ initial, state string }
	tests := []struct {
		name     string
		members  []etcdv1beta2.EtcdMember
		replicas int32
		files    map[string]file
		// minAvailable is the PodDisruptionBudget's; 0 for none.
		minAvailable int
	}{
		{name: "nothing recorded: no pod", replicas: 0, files: map[string]file{}},
		{name: "the seed bootstraps a new cluster", members: []etcdv1beta2.EtcdMember{{Name: "example-0"}}, replicas: 1,
			files: map[string]file{"example-0": {url0, ClusterStateNew}}},
		{name: "a member added joins the registered members; a started one names only itself",
			members:  []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-1", ID: "2"}},
			replicas: 2, minAvailable: 2,
			files: map[string]file{"example-0": {url0, ClusterStateExisting}, "example-1": {url0 + "," + url1, ClusterStateExisting}}},
		{name: "a member being replaced keeps its pod, without a file",
			members:  []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-2", ID: "3", ClaimUID: "c2"}},
			replicas: 3, minAvailable: 2,
			files: map[string]file{"example-0": {url0, ClusterStateExisting}, "example-2": {url2, ClusterStateExisting}}},
		{name: "the member added back joins",
			members:  []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "c0"}, {Name: "example-1", ID: "4"}, {Name: "example-2", ID: "3", ClaimUID: "c2"}},
			replicas: 3, minAvailable: 2,
			files: map[string]file{"example-0": {url0, ClusterStateExisting}, "example-1": {url0 + "," + url1 + "," + url2, ClusterStateExisting}, "example-2": {url2, ClusterStateExisting}}},
		{name: "five members keep three", members: []etcdv1beta2.EtcdMember{{Name: "example-4", ID: "5"}, {Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}, {Name: "example-2", ID: "3"}, {Name: "example-3", ID: "4"}},
			replicas: 5, minAvailable: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(owner, s, FromStatus(owner.Name, tt.members))
			if got := *c.StatefulSet.Spec.Replicas; got != tt.replicas {
				t.Errorf("replicas %d, want %d", got, tt.replicas)
			}
			if tt.files != nil && len(c.ConfigMap.Data) != len(tt.files) {
				t.Errorf("start-up files %v, want %d", c.ConfigMap.Data, len(tt.files))
			}
			for member, want := range tt.files {
				var got Config
				if err := yaml.UnmarshalStrict([]byte(c.ConfigMap.Data[ConfigKey(member)]), &got); err != nil {
					t.Fatalf("%s: %v", member, err)
				}
				if got.InitialCluster != want.initial || got.InitialClusterState != want.state {
					t.Errorf("%s joins %q (%s), want %q (%s)", member, got.InitialCluster, got.InitialClusterState, want.initial, want.state)
				}
				if got.Name != member || got.InitialAdvertisePeerURLs != PeerURL(HTTP, "example", "ns", member) || got.AdvertiseClientURLs != "http://"+member+".example.ns.svc:2379" {
					t.Errorf("%s: start-up file %+v", member, got)
				}
			}
			switch {
			case tt.minAvailable == 0 && c.PodDisruptionBudget != nil:
				t.Errorf("a PodDisruptionBudget over %d members", len(tt.members))
			case tt.minAvailable > 0 && (c.PodDisruptionBudget == nil || *c.PodDisruptionBudget.Spec.MinAvailable != intstr.FromInt32(int32(tt.minAvailable))):
				t.Errorf("PodDisruptionBudget %+v, want minAvailable %d", c.PodDisruptionBudget, tt.minAvailable)
			}
			ctr := c.StatefulSet.Spec.Template.Spec.Containers[0]
			if *ctr.Image != "quay.io/coreos/etcd:v3.6.16" {
				t.Errorf("image %s", *ctr.Image)
			}
			if !slices.Equal(ctr.Args, []string{"--config-file=/etc/etcd/$(POD_NAME).yaml"}) {
				t.Errorf("args %q do not start from the pod's start-up file", ctr.Args)
			}
			sts := c.StatefulSet.Spec
			if *sts.PodManagementPolicy != "Parallel" || *sts.UpdateStrategy.Type != "OnDelete" {
				t.Errorf("the StatefulSet orders pods itself: %+v", sts)
			}
			if len(sts.VolumeClaimTemplates) != 1 || *sts.VolumeClaimTemplates[0].Name != DataVolume ||
				*sts.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				t.Errorf("member data not on claims deleted with their member: %+v, %+v", sts.VolumeClaimTemplates, sts.PersistentVolumeClaimRetentionPolicy)
			}
			if !*c.Service.Spec.PublishNotReadyAddresses || *c.Service.Spec.ClusterIP != "None" {
				t.Errorf("peer Service %+v is not headless with not-ready addresses", c.Service.Spec)
			}
		})
	}
}

func TestPeerURLNamesItsMember(t *testing.T) {
	for _, scheme := range []Scheme{HTTP, HTTPS} {
		for _, name := range []string{"example-0", "example-8"} {
			if got, ok := MemberOfPeerURL("example", "ns", PeerURL(scheme, "example", "ns", name)); !ok || got != name {
				t.Errorf("MemberOfPeerURL(PeerURL(%s, %s)) = %q, %v", scheme, name, got, ok)
			}
		}
	}
	for _, url := range []string{"http://example-0.other.ns.svc:2380", "ftp://example-0.example.ns.svc:2380", "example-0.example.ns.svc:2380", "http://example-x.example.ns.svc:2380", "http://example-01.example.ns.svc:2380"} {
		if got, ok := MemberOfPeerURL("example", "ns", url); ok {
			t.Errorf("MemberOfPeerURL(%s) = %q, want none", url, got)
		}
	}
}

// A member is ready while it serves, and a NOSPACE alarm, which leaves
// reads, deletes and compaction served, does not take it out of the client
// Service.
func TestMemberReadinessLeavesNoSpaceOut(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
	sts := Build(owner, spec(3, "3.6.16"), FromStatus("example", nil)).StatefulSet
	probe := sts.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil || *probe.HTTPGet.Path != "/health?exclude=NOSPACE" {
		t.Fatalf("readiness probe %+v, want an HTTP GET of /health?exclude=NOSPACE", probe)
	}
}

// TestSpaceBoundsEveryStartUpFile: every member starts with periodic
// compaction and a backend quota, spec.maintenance's or the defaults, the
// default quota sized from the claim.
func TestSpaceBoundsEveryStartUpFile(t *testing.T) {
	for _, c := range []struct {
		size string
		want int64
	}{
		{"", 1792 << 20},     // the default claim, 4Gi: (4Gi - 512Mi) / 2
		{"10Gi", 4864 << 20}, // (10Gi - 512Mi) / 2
		{"20Gi", 8 << 30},    // capped at etcd's suggested maximum
		{"512Mi", 16 << 20},  // nothing beside the log: the least the API accepts
	} {
		spec := &etcdv1beta2.EtcdClusterSpec{}
		if c.size != "" {
			size := resource.MustParse(c.size)
			spec.Storage = &etcdv1beta2.Storage{Size: &size}
		}
		if got := DefaultBackendQuota(spec); got != c.want {
			t.Errorf("default quota %d from a claim of %q, want %d", got, c.size, c.want)
		}
	}
	for _, tt := range []struct {
		name        string
		maintenance *etcdv1beta2.MaintenancePolicy
		want        Space
	}{
		{"defaults", nil, Space{AutoCompactionMode: "periodic", AutoCompactionRetention: "1h0m0s", QuotaBackendBytes: 1792 << 20}},
		{"empty", &etcdv1beta2.MaintenancePolicy{}, Space{AutoCompactionMode: "periodic", AutoCompactionRetention: "1h0m0s", QuotaBackendBytes: 1792 << 20}},
		{"set", &etcdv1beta2.MaintenancePolicy{CompactionRetention: &metav1.Duration{Duration: 5 * time.Minute}, BackendQuota: ptr.To(resource.MustParse("32Mi"))},
			Space{AutoCompactionMode: "periodic", AutoCompactionRetention: "5m0s", QuotaBackendBytes: 32 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(3, "3.6.16")
			s.Maintenance = tt.maintenance
			c := Build(testOwner(), s, FromStatus("example", []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}}))
			for key, file := range c.ConfigMap.Data {
				var got Config
				if err := yaml.UnmarshalStrict([]byte(file), &got); err != nil {
					t.Fatal(err)
				}
				if got.Space != tt.want {
					t.Errorf("%s: %+v, want %+v", key, got.Space, tt.want)
				}
			}
		})
	}
}
