package etcdcluster

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestBuildFollowsTheRecordedMembership(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: "ns", UID: "uid"}
	s := spec(3, "3.6.16")
	tests := []struct {
		name     string
		members  []etcdv1beta2.EtcdMember
		replicas int32
		initial  string
		state    string
		// minAvailable is the PodDisruptionBudget's; 0 for none.
		minAvailable int
	}{
		{name: "nothing recorded: no pod", replicas: 0, state: ClusterStateExisting},
		{name: "the seed bootstraps a new cluster", members: []etcdv1beta2.EtcdMember{{Name: "example-0"}}, replicas: 1,
			initial: "example-0=http://example-0.example.ns.svc:2380", state: ClusterStateNew},
		{name: "once etcd reports the seed, members join an existing cluster", members: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}},
			replicas: 2, initial: "example-0=http://example-0.example.ns.svc:2380,example-1=http://example-1.example.ns.svc:2380", state: ClusterStateExisting, minAvailable: 2},
		{name: "a member being replaced keeps its pod", members: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}, {Name: "example-2", ID: "3"}},
			replicas: 3, initial: "example-0=http://example-0.example.ns.svc:2380,example-2=http://example-2.example.ns.svc:2380", state: ClusterStateExisting, minAvailable: 2},
		{name: "five members keep three", members: []etcdv1beta2.EtcdMember{{Name: "example-4", ID: "5"}, {Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}, {Name: "example-2", ID: "3"}, {Name: "example-3", ID: "4"}},
			replicas: 5, state: ClusterStateExisting, minAvailable: 3,
			initial: "example-0=http://example-0.example.ns.svc:2380,example-1=http://example-1.example.ns.svc:2380,example-2=http://example-2.example.ns.svc:2380,example-3=http://example-3.example.ns.svc:2380,example-4=http://example-4.example.ns.svc:2380"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Build(owner, s, tt.members)
			if got := *c.StatefulSet.Spec.Replicas; got != tt.replicas {
				t.Errorf("replicas %d, want %d", got, tt.replicas)
			}
			if got := c.ConfigMap.Data[KeyInitialCluster]; got != tt.initial {
				t.Errorf("initial cluster %q, want %q", got, tt.initial)
			}
			if got := c.ConfigMap.Data[KeyInitialClusterState]; got != tt.state {
				t.Errorf("initial cluster state %q, want %q", got, tt.state)
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
			if !slices.Contains(ctr.Args, "--initial-advertise-peer-urls=http://$(POD_NAME).example.ns.svc:2380") {
				t.Errorf("args %q do not advertise the pod's peer URL", ctr.Args)
			}
			if *c.StatefulSet.Spec.PodManagementPolicy != "Parallel" || *c.StatefulSet.Spec.UpdateStrategy.Type != "OnDelete" {
				t.Errorf("the StatefulSet orders pods itself: %+v", c.StatefulSet.Spec)
			}
			if !*c.Service.Spec.PublishNotReadyAddresses || *c.Service.Spec.ClusterIP != "None" {
				t.Errorf("peer Service %+v is not headless with not-ready addresses", c.Service.Spec)
			}
		})
	}
}

func TestPeerURLNamesItsMember(t *testing.T) {
	for _, name := range []string{"example-0", "example-8"} {
		if got, ok := MemberOfPeerURL("example", "ns", PeerURL("example", "ns", name)); !ok || got != name {
			t.Errorf("MemberOfPeerURL(PeerURL(%s)) = %q, %v", name, got, ok)
		}
	}
	for _, url := range []string{"http://example-0.other.ns.svc:2380", "https://example-0.example.ns.svc:2380", "http://example-x.example.ns.svc:2380", "http://example-01.example.ns.svc:2380"} {
		if got, ok := MemberOfPeerURL("example", "ns", url); ok {
			t.Errorf("MemberOfPeerURL(%s) = %q, want none", url, got)
		}
	}
}
