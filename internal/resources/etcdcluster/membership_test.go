package etcdcluster

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestMembershipOf(t *testing.T) {
	three := []Member{with(m(0, 1), func(x *Member) { x.Leader = true }), m(1, 2), m(2, 3)}
	liveFiles := map[string]string{"example-0.yaml": "zero", "example-1.yaml": "one", "example-2.yaml": "two"}
	tests := []struct {
		name string
		obs  Observed
		live Live
		// replicas, files (the keys of the start-up files) and members
		// (the names of the members) are what the build gets.
		replicas int32
		files    []string
		members  []string
		// kept are the live files kept as they are.
		kept []string
	}{
		{name: "a re-created resource (empty status) over running members is sized from etcd's members",
			obs:      Observed{Reachable: true, FromLeader: true, Members: three, Pods: pods(img3616, three...)},
			live:     Live{Replicas: ptr.To[int32](3), Files: liveFiles},
			replicas: 3, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml"}, members: []string{"example-0", "example-1", "example-2"}},
		{name: "a re-created resource whose members do not answer keeps the live StatefulSet's size and files",
			obs:      Observed{Pods: pods(img3616, three...)},
			live:     Live{Replicas: ptr.To[int32](3), Files: liveFiles},
			replicas: 3, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml"},
			kept: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml"}},
		{name: "a recorded membership smaller than the live StatefulSet does not shrink it while no member answers",
			obs:      Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}}},
			live:     Live{Replicas: ptr.To[int32](3), Files: liveFiles},
			replicas: 3, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml"}, members: []string{"example-0"},
			kept: []string{"example-1.yaml", "example-2.yaml"}},
		{name: "a seed being started grows the StatefulSet from none",
			obs:      Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0"}}},
			replicas: 1, files: []string{"example-0.yaml"}, members: []string{"example-0"}},
		{name: "a seed being started grows an empty StatefulSet",
			obs:      Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0"}}},
			live:     Live{Replicas: ptr.To[int32](0)},
			replicas: 1, files: []string{"example-0.yaml"}, members: []string{"example-0"}},
		{name: "a follower's member list does not shrink the StatefulSet",
			obs:      Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			live:     Live{Replicas: ptr.To[int32](4), Files: map[string]string{"example-3.yaml": "three"}},
			replicas: 4, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml", "example-3.yaml"},
			members: []string{"example-0", "example-1", "example-2"}, kept: []string{"example-3.yaml"}},
		{name: "the leader's member list shrinks the StatefulSet after a removal",
			obs:      Observed{Reachable: true, FromLeader: true, Members: three, Pods: pods(img3616, three...)},
			live:     Live{Replicas: ptr.To[int32](4), Files: map[string]string{"example-3.yaml": "three"}},
			replicas: 3, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml"}, members: []string{"example-0", "example-1", "example-2"}},
		{name: "the leader's member list grows the StatefulSet after an addition",
			obs: Observed{Reachable: true, FromLeader: true, Members: append(slices.Clone(three), Member{ID: 4, Name: "example-3", Learner: true}),
				Pods: pods(img3616, three...)},
			live:     Live{Replicas: ptr.To[int32](3)},
			replicas: 4, files: []string{"example-0.yaml", "example-1.yaml", "example-2.yaml", "example-3.yaml"},
			members: []string{"example-0", "example-1", "example-2", "example-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.Cluster = "example"
			got := MembershipOf(tt.obs, tt.live)
			if got.Replicas != tt.replicas {
				t.Errorf("replicas %d, want %d", got.Replicas, tt.replicas)
			}
			var names []string
			for _, r := range got.Members {
				names = append(names, r.Name)
			}
			if diff := cmp.Diff(tt.members, names); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kept, slices.Sorted(maps.Keys(got.Kept))); diff != "" {
				t.Errorf("kept files (-want +got):\n%s", diff)
			}
			c := Build(testOwner(), spec(3, "3.6.16"), got)
			if diff := cmp.Diff(tt.files, slices.Sorted(maps.Keys(c.ConfigMap.Data))); diff != "" {
				t.Errorf("start-up files (-want +got):\n%s", diff)
			}
			if *c.StatefulSet.Spec.Replicas != tt.replicas {
				t.Errorf("StatefulSet replicas %d, want %d", *c.StatefulSet.Spec.Replicas, tt.replicas)
			}
			for _, k := range tt.kept {
				if c.ConfigMap.Data[k] != tt.live.Files[k] {
					t.Errorf("file %s %q, want the live one kept, %q", k, c.ConfigMap.Data[k], tt.live.Files[k])
				}
			}
		})
	}
}

func testOwner() resources.Owner {
	return resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdCluster"), Name: "example", Namespace: ns, UID: "uid"}
}
