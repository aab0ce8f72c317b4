package etcd

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// fakeMember is member id of cluster, knowing leader, at version 3.6.16.
func fakeMember(cluster, id, leader uint64) *etcd.FakeMember {
	return &etcd.FakeMember{Status: etcd.Status{ClusterID: cluster, MemberID: id, Leader: leader, Version: "3.6.16"}}
}

// listOf is a member list of the members named, with IDs from 1.
func listOf(names ...string) []etcd.Member {
	out := make([]etcd.Member, 0, len(names))
	for i, n := range names {
		out = append(out, etcd.Member{ID: uint64(i + 1), Name: n, PeerURLs: []string{etcdcluster.PeerURL(etcdcluster.HTTP, "example", "ns", n)}})
	}
	return out
}

func url(pod string) string { return "http://" + pod + ":2379" }

// fakeCluster returns three healthy members of cluster 7 at the pods
// example-0..2, example-0 the leader, each knowing members.
func fakeCluster(members []etcd.Member) *etcd.Fake {
	f := &etcd.Fake{Endpoints: map[string]*etcd.FakeMember{}}
	for i, n := range []string{"example-0", "example-1", "example-2"} {
		m := fakeMember(7, uint64(i+1), 1)
		m.Members = slices.Clone(members)
		f.Endpoints[url(n)] = m
	}
	return f
}

func urlsOf(pods ...string) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p] = url(p)
	}
	return out
}

// summary is what a test compares of askMembers' answer: each member as
// name/health/learner/leader/alarms.
func summary(a memberAnswers) []string {
	out := make([]string, 0, len(a.members))
	for _, m := range a.members {
		out = append(out, fmt.Sprintf("%s healthy=%v learner=%v leader=%v alarms=%v", m.Name, m.Healthy, m.Learner, m.Leader, m.Alarms))
	}
	return out
}

func TestAskMembers(t *testing.T) {
	three := listOf("example-0", "example-1", "example-2")
	healthy := []string{
		"example-0 healthy=true learner=false leader=true alarms=[]",
		"example-1 healthy=true learner=false leader=false alarms=[]",
		"example-2 healthy=true learner=false leader=false alarms=[]",
	}
	tests := []struct {
		name     string
		fake     func() *etcd.Fake
		recorded uint64
		// want are the members (see summary); reachable, fromLeader,
		// clusterID and foreign the rest of the answer.
		want       []string
		reachable  bool
		fromLeader bool
		clusterID  uint64
		foreign    []string
	}{
		{name: "three members of one cluster answer: the leader's list",
			fake: func() *etcd.Fake { return fakeCluster(three) },
			want: healthy, reachable: true, fromLeader: true, clusterID: 7},
		{name: "without the leader's answer, a follower's list is not the leader's",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				delete(f.Endpoints, url("example-0"))
				return f
			},
			want: []string{
				"example-0 healthy=false learner=false leader=true alarms=[]",
				"example-1 healthy=true learner=false leader=false alarms=[]",
				"example-2 healthy=true learner=false leader=false alarms=[]",
			}, reachable: true, clusterID: 7},
		{name: "a pod running a member of another cluster is not counted, nor is its list",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				other := fakeMember(99, 50, 50)
				other.Members = []etcd.Member{{ID: 50, Name: "example-2", PeerURLs: []string{etcdcluster.PeerURL(etcdcluster.HTTP, "example", "ns", "example-2")}},
					{ID: 51, Name: "example-9"}}
				f.Endpoints[url("example-2")] = other
				return f
			},
			want: []string{
				"example-0 healthy=true learner=false leader=true alarms=[]",
				"example-1 healthy=true learner=false leader=false alarms=[]",
				"example-2 healthy=false learner=false leader=false alarms=[]",
			}, reachable: true, fromLeader: true, clusterID: 7, foreign: []string{"example-2"}},
		{name: "the recorded cluster counts even when more pods answer for another",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				for _, n := range []string{"example-1", "example-2"} {
					m := fakeMember(99, 60, 60)
					m.Members = []etcd.Member{{ID: 60, Name: n}}
					f.Endpoints[url(n)] = m
				}
				return f
			},
			recorded: 7,
			want: []string{
				"example-0 healthy=true learner=false leader=true alarms=[]",
				"example-1 healthy=false learner=false leader=false alarms=[]",
				"example-2 healthy=false learner=false leader=false alarms=[]",
			}, reachable: true, fromLeader: true, clusterID: 7, foreign: []string{"example-1", "example-2"}},
		{name: "no pod answering for the recorded cluster is no member answering",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				for _, m := range f.Endpoints {
					m.Status.ClusterID = 99
				}
				return f
			},
			recorded: 7, clusterID: 7, foreign: []string{"example-0", "example-1", "example-2"}},
		{name: "a pod answering as another member than its own is not counted",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				f.Endpoints[url("example-1")].Status.MemberID = 1
				return f
			},
			want: []string{
				"example-0 healthy=true learner=false leader=true alarms=[]",
				"example-1 healthy=false learner=false leader=false alarms=[]",
				"example-2 healthy=true learner=false leader=false alarms=[]",
			}, reachable: true, fromLeader: true, clusterID: 7, foreign: []string{"example-1"}},
		{name: "a NOSPACE alarm is an alarm: the member is still healthy",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				for _, m := range f.Endpoints {
					m.Status.Alarms = []etcd.Alarm{{Name: "NOSPACE", MemberID: 1}}
				}
				return f
			},
			want: []string{
				"example-0 healthy=true learner=false leader=true alarms=[NOSPACE]",
				"example-1 healthy=true learner=false leader=false alarms=[NOSPACE]",
				"example-2 healthy=true learner=false leader=false alarms=[NOSPACE]",
			}, reachable: true, fromLeader: true, clusterID: 7},
		{name: "a member without a leader is not healthy",
			fake: func() *etcd.Fake {
				f := fakeCluster(three)
				for _, m := range f.Endpoints {
					m.Status.Leader = 0
					m.Status.Errors = []string{"etcdserver: no leader"}
				}
				return f
			},
			want: []string{
				"example-0 healthy=false learner=false leader=false alarms=[]",
				"example-1 healthy=false learner=false leader=false alarms=[]",
				"example-2 healthy=false learner=false leader=false alarms=[]",
			}, reachable: true, clusterID: 7},
		{name: "a learner added but not started is named after its peer URL",
			fake: func() *etcd.Fake {
				withLearner := append(slices.Clone(three), etcd.Member{ID: 4, PeerURLs: []string{etcdcluster.PeerURL(etcdcluster.HTTP, "example", "ns", "example-3")}, IsLearner: true})
				return fakeCluster(withLearner)
			},
			want:      append(slices.Clone(healthy), "example-3 healthy=false learner=true leader=false alarms=[]"),
			reachable: true, fromLeader: true, clusterID: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fake()
			got := askMembers(context.Background(), f.Dial, "example", "ns", urlsOf("example-0", "example-1", "example-2"), tt.recorded)
			if diff := cmp.Diff(tt.want, summary(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if got.reachable != tt.reachable || got.fromLeader != tt.fromLeader || got.clusterID != tt.clusterID {
				t.Errorf("reachable %v, from the leader %v, cluster %d; want %v, %v, %d", got.reachable, got.fromLeader, got.clusterID, tt.reachable, tt.fromLeader, tt.clusterID)
			}
			if diff := cmp.Diff(tt.foreign, got.foreign); diff != "" {
				t.Errorf("foreign pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangeMembership(t *testing.T) {
	three := listOf("example-0", "example-1", "example-2")
	ask := func(f *etcd.Fake) etcdcluster.Observed {
		a := askMembers(context.Background(), f.Dial, "example", "ns", urlsOf("example-0", "example-1", "example-2"), 0)
		return etcdcluster.Observed{Cluster: "example", Reachable: a.reachable, Members: a.members, FromLeader: a.fromLeader}
	}
	t.Run("a learner is added through the healthy voters, and recorded", func(t *testing.T) {
		f := fakeCluster(three)
		obs := ask(f)
		a := etcdcluster.Action{Kind: etcdcluster.AddLearner, Member: "example-3", PeerURL: etcdcluster.PeerURL(etcdcluster.HTTP, "example", "ns", "example-3")}
		members, waiting, err := changeMembership(context.Background(), f.Dial, obs, urlsOf("example-0", "example-1", "example-2"), a)
		if err != nil || waiting != "" {
			t.Fatalf("waiting %q, error %v", waiting, err)
		}
		if diff := cmp.Diff([]string{"add http://example-3.example.ns.svc:2380 learner=true"}, f.Calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		if len(members) != 4 || members[3].Name != "example-3" || !members[3].Learner {
			t.Errorf("recorded %+v, want the learner example-3 added", members)
		}
		// The next look sees it, named after its peer URL.
		if got := ask(f); len(got.Members) != 4 || got.Members[3].Name != "example-3" || got.Members[3].Started {
			t.Errorf("members after the add %+v", got.Members)
		}
	})
	t.Run("a promotion etcd refuses for now is a wait, not an error", func(t *testing.T) {
		f := fakeCluster(three)
		f.Refuse = fmt.Errorf("%w: learner not in sync", etcd.ErrNotReady)
		_, waiting, err := changeMembership(context.Background(), f.Dial, ask(f), urlsOf("example-0", "example-1", "example-2"),
			etcdcluster.Action{Kind: etcdcluster.Promote, Member: "example-2", ID: 3})
		if err != nil || waiting != "Learner example-2 is catching up with the leader" {
			t.Errorf("waiting %q, error %v", waiting, err)
		}
	})
	t.Run("a removal is recorded without the member", func(t *testing.T) {
		f := fakeCluster(three)
		members, _, err := changeMembership(context.Background(), f.Dial, ask(f), urlsOf("example-0", "example-1", "example-2"),
			etcdcluster.Action{Kind: etcdcluster.Remove, Member: "example-2", ID: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(members) != 2 || slices.ContainsFunc(members, func(m etcdv1beta2.EtcdMember) bool { return m.Name == "example-2" }) {
			t.Errorf("recorded %+v, want example-2 gone", members)
		}
		if diff := cmp.Diff([]string{"remove 3"}, f.Calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})
	t.Run("the leadership moves through the leader only", func(t *testing.T) {
		f := fakeCluster(three)
		delete(f.Endpoints, url("example-1"))
		obs := ask(f)
		for i := range obs.Members {
			obs.Members[i].Leader = obs.Members[i].Name == "example-1"
		}
		_, _, err := changeMembership(context.Background(), f.Dial, obs, urlsOf("example-0", "example-1", "example-2"),
			etcdcluster.Action{Kind: etcdcluster.MoveLeader, Member: "example-0", ID: 1})
		if err == nil {
			t.Errorf("moved the leadership through a member that is not the leader: calls %v", f.Calls)
		}
	})
}
