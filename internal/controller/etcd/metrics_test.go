package etcd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

func TestEtcdSampleOf(t *testing.T) {
	voter := func(name string, healthy, leader bool) etcdcluster.Member {
		return etcdcluster.Member{Name: name, Started: true, Healthy: healthy, Leader: leader}
	}
	learner := func(name string, healthy bool) etcdcluster.Member {
		return etcdcluster.Member{Name: name, Learner: true, Healthy: healthy}
	}
	tests := []struct {
		name    string
		size    int32
		members []etcdcluster.Member
		reached bool
		want    etcdSample
	}{
		{"should count a healthy cluster of three a margin of one", 3,
			[]etcdcluster.Member{voter("a", true, true), voter("b", true, false), voter("c", true, false)}, true,
			etcdSample{Members: 3, Healthy: 3, Leader: true, QuorumMargin: 1}},
		{"should count a cluster of three with a member down a margin of zero", 3,
			[]etcdcluster.Member{voter("a", true, true), voter("b", true, false), voter("c", false, false)}, true,
			etcdSample{Members: 3, Healthy: 2, Leader: true, QuorumMargin: 0}},
		{"should leave learners out of the quorum", 3,
			[]etcdcluster.Member{voter("a", true, true), voter("b", true, false), voter("c", true, false), learner("d", true)}, true,
			etcdSample{Members: 4, Healthy: 4, Learners: 1, Leader: true, QuorumMargin: 1}},
		{"should count a lost quorum negative", 5,
			[]etcdcluster.Member{voter("a", true, false), voter("b", true, false), voter("c", false, false), voter("d", false, false), voter("e", false, false)}, true,
			etcdSample{Members: 5, Healthy: 2, QuorumMargin: -1}},
		{"should take spec.size for the quorum when no member answers", 3, nil, false,
			etcdSample{QuorumMargin: -2}},
		{"should count a single member a margin of zero", 1, []etcdcluster.Member{voter("a", true, true)}, true,
			etcdSample{Members: 1, Healthy: 1, Leader: true, QuorumMargin: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := etcdSampleOf(&etcdv1beta2.EtcdClusterSpec{Size: tt.size}, etcdcluster.Observed{Reachable: tt.reached, Members: tt.members})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
