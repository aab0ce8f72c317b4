package etcdcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

const ns = "ns"

// m is a started, healthy voting member of the cluster "example" at
// version 3.6.16.
func m(ordinal int, id uint64) Member {
	return Member{ID: id, Name: MemberName("example", ordinal), Started: true, Healthy: true, Version: "3.6.16"}
}

func with(mem Member, f func(*Member)) Member { f(&mem); return mem }

// pods returns a pod per member, at image, with uid "uid-<name>", on a
// claim of uid "claim-<name>", ready when its member is healthy.
func pods(image string, members ...Member) map[string]Pod {
	p := map[string]Pod{}
	for _, mem := range members {
		p[mem.Name] = Pod{UID: "uid-" + mem.Name, Image: image, ClaimUID: "claim-" + mem.Name, Ready: mem.Healthy}
	}
	return p
}

const img3616 = "quay.io/coreos/etcd:v3.6.16"

func spec(size int32, version string) *etcdv1beta2.EtcdClusterSpec {
	return &etcdv1beta2.EtcdClusterSpec{Size: size, Version: version, Repository: etcdv1beta2.DefaultRepository}
}

func TestNext(t *testing.T) {
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	down := func(mem Member) Member {
		return with(mem, func(x *Member) { x.Healthy, x.Version = false, "" })
	}
	three := []Member{leader(m(0, 1)), m(1, 2), m(2, 3)}
	tests := []struct {
		name string
		spec *etcdv1beta2.EtcdClusterSpec
		obs  Observed
		want Action
		// reason is the decision's reason; failure whether it is one.
		reason  string
		failure bool
		// message is a fragment of the decision's message.
		message string
	}{
		{name: "a new cluster starts its seed", spec: spec(3, "3.6.16"),
			obs:  Observed{},
			want: Action{Kind: Seed, Member: "example-0"}, reason: etcdv1beta2.ReasonScaling},
		{name: "the seed is awaited", spec: spec(3, "3.6.16"),
			obs:    Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0"}}},
			reason: etcdv1beta2.ReasonScaling, message: "Waiting for seed member example-0"},
		{name: "a cluster of one grows by a learner", spec: spec(3, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1))}, Pods: pods(img3616, m(0, 1))},
			want: Action{Kind: AddLearner, Member: "example-1", PeerURL: "http://example-1.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonScaling},
		{name: "a member that has not started yet is awaited", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 2, Name: "example-1", Learner: true}},
				Pods: pods(img3616, m(0, 1))},
			reason: etcdv1beta2.ReasonScaling, message: "example-1 is joining"},
		{name: "the pod of a joining member that waits out a crash loop is restarted", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 2, Name: "example-1", Learner: true}},
				Pods: map[string]Pod{"example-0": {UID: "uid-example-0"}, "example-1": {UID: "uid-example-1", CrashLooping: true}}},
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonScaling},
		{name: "a started learner is promoted", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Learner = true })},
				Pods: pods(img3616, m(0, 1), m(1, 2))},
			want: Action{Kind: Promote, Member: "example-1", ID: 2}, reason: etcdv1beta2.ReasonScaling},
		{name: "at the spec nothing is done", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)}},
		{name: "growing to five adds the lowest free ordinal", spec: spec(5, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(2, 3), m(1, 2)}, Pods: pods(img3616, three...)},
			want: Action{Kind: AddLearner, Member: "example-3", PeerURL: "http://example-3.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonScaling},
		{name: "growing past the claims of the members adds a member", spec: spec(4, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...),
				Claims: map[string]string{"data-example-0": "claim-example-0", "data-example-1": "claim-example-1", "data-example-2": "claim-example-2"}},
			want: Action{Kind: AddLearner, Member: "example-3", PeerURL: "http://example-3.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonScaling},
		{name: "a member removed from the end is added again only once its claim is gone", spec: spec(4, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...),
				Claims: map[string]string{"data-example-0": "claim-example-0", "data-example-1": "claim-example-1", "data-example-2": "claim-example-2", "data-example-3": "removed"}},
			reason: etcdv1beta2.ReasonScaling, message: "delete the pod and claim data-example-3"},
		{name: "a member removed from the end is added again only once its pod is gone", spec: spec(4, "3.6.16"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, append(append([]Member{}, three...), m(3, 4))...)},
			reason: etcdv1beta2.ReasonScaling, message: "before adding example-3 again"},
		{name: "a gap is filled first", spec: spec(3, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(2, 3)}, Pods: pods(img3616, three...)},
			want: Action{Kind: AddLearner, Member: "example-1", PeerURL: "http://example-1.example.ns.svc:2380"}, reason: etcdv1beta2.ReasonScaling},
		{name: "shrinking removes the highest ordinal", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: append(append([]Member{}, three...), m(3, 4), m(4, 5)),
				Pods: pods(img3616, append(append([]Member{}, three...), m(3, 4), m(4, 5))...)},
			want: Action{Kind: Remove, Member: "example-4", ID: 5}, reason: etcdv1beta2.ReasonScaling},
		{name: "the leader hands over before it is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{m(0, 1), m(1, 2), m(2, 3), leader(m(3, 4))},
				Pods: pods(img3616, m(0, 1), m(1, 2), m(2, 3), m(3, 4))},
			want: Action{Kind: MoveLeader, Member: "example-0", ID: 1}, reason: etcdv1beta2.ReasonScaling},
		{name: "shrinking three to one is refused before any member is removed: it would stop at two", spec: spec(1, "3.6.16"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonScaleInRefused, failure: true, message: "Not removing members from 3 toward 1: the last removal would be from a cluster of two"},
		{name: "shrinking five to two goes on", spec: spec(2, "3.6.16"),
			obs: Observed{Reachable: true, Members: append(append([]Member{}, three...), m(3, 4), m(4, 5)),
				Pods: pods(img3616, append(append([]Member{}, three...), m(3, 4), m(4, 5))...)},
			want: Action{Kind: Remove, Member: "example-4", ID: 5}, reason: etcdv1beta2.ReasonScaling},
		{name: "removing from two members is refused", spec: spec(1, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2)}, Pods: pods(img3616, m(0, 1), m(1, 2))},
			reason: etcdv1beta2.ReasonScaleInRefused, failure: true, message: "a cluster of two cannot remove one safely"},
		{name: "no change without every member healthy", spec: spec(5, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3))}, Pods: pods(img3616, leader(m(0, 1)), m(1, 2), down(m(2, 3)))},
			reason: etcdv1beta2.ReasonMemberUnhealthy, message: "example-2"},
		{name: "a member the operator cannot reach whose pod serves is MembersUnreachable, beside a quorum it reaches", spec: spec(5, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3))}, Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonMembersUnreachable, failure: true, message: "cannot reach members example-2, whose pods are ready"},
		{name: "a member down beside one out of reach is MemberUnhealthy", spec: spec(5, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3)), down(m(3, 4)), m(4, 5)},
				Pods: pods(img3616, leader(m(0, 1)), m(1, 2), m(2, 3), down(m(3, 4)), m(4, 5))},
			reason: etcdv1beta2.ReasonMemberUnhealthy, message: "example-2, example-3"},
		{name: "two of three down is a lost quorum", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{m(0, 1), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, m(0, 1), down(m(1, 2)), down(m(2, 3)))},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true, message: "down: example-1, example-2."},
		{name: "a member up without a leader is named so", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{with(m(0, 1), func(x *Member) { x.Healthy = false }), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, down(m(0, 1)), down(m(1, 2)), down(m(2, 3)))},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true, message: "0 of 3 voting members are healthy, 2 needed for a quorum; down: example-1, example-2; up without a leader: example-0."},
		{name: "no member answering is a lost quorum", spec: spec(3, "3.6.16"),
			obs:    Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2"}, {Name: "example-0", ID: "1"}}},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true, message: "down: example-0, example-1"},
		{name: "a lost quorum wins over a shrink", spec: spec(1, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{m(0, 1), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, m(0, 1), down(m(1, 2)), down(m(2, 3)))},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true},
		{name: "a member whose pod came back on a new claim is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "claim-example-0"}, {Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, three...)},
			want: Action{Kind: Remove, Member: "example-1", ID: 2}, reason: etcdv1beta2.ReasonReplacing},
		{name: "a member whose pod was replaced on its own claim is awaited, not replaced", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "claim-example-1"}},
				Pods:     map[string]Pod{"example-0": {}, "example-1": {UID: "new pod", ClaimUID: "claim-example-1"}, "example-2": {}}},
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "a member healthy on a new claim (its data restored there) is kept", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: three,
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, three...)}},
		{name: "a member whose claim is not there yet waits", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     map[string]Pod{"example-0": {}, "example-1": {UID: "new pod"}, "example-2": {}}},
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "a member whose pod is gone waits for the StatefulSet", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, m(0, 1), m(2, 3))},
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "a member stranded on a gone node gets a new volume", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "claim-example-1"}},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			want:   Action{Kind: ReplaceVolume, Member: "example-1", PodUID: "uid-example-1", ClaimUID: "claim-example-1"},
			reason: etcdv1beta2.ReasonReplacing, message: "node n1, which is gone"},
		{name: "a stranded member without a quorum is no reason to change anything", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(down(m(0, 1))), down(m(1, 2)), m(2, 3)},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true},
		{name: "a stranded member's volume is replaced only once its claim is read", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			reason: etcdv1beta2.ReasonMemberUnhealthy},
		{name: "an upgrade starts with a follower", spec: spec(3, "3.7.0"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: etcdv1beta2.ReasonUpgrading},
		{name: "an upgrade waits for the member it restarted", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: three, Pods: map[string]Pod{
				"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: img3616, Ready: true}}},
			reason: etcdv1beta2.ReasonUpgrading, message: "example-1 is restarting"},
		{name: "an upgrade waits for the pod it restarted to be ready", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), m(2, 3)},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0"}, "example-2": {Image: img3616, Ready: true}}},
			reason: etcdv1beta2.ReasonUpgrading, message: "example-1 is restarting"},
		{name: "an upgrade waits for a member just promoted, healthy, whose pod is not ready yet", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: three, Pods: map[string]Pod{
				"example-0": {Image: img3616, Ready: true}, "example-1": {Image: img3616, Ready: true}, "example-2": {Image: img3616}}},
			reason: etcdv1beta2.ReasonUpgrading, message: "Waiting for the pod of member example-2 to be ready"},
		{name: "an upgrade ends with the leader", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), with(m(2, 3), func(x *Member) { x.Version = "3.7.0" })},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}}},
			want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonUpgrading, message: "before upgrading example-0"},
		{name: "the former leader is upgraded last", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{m(0, 1), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), with(leader(m(2, 3)), func(x *Member) { x.Version = "3.7.0" })},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}}},
			want: Action{Kind: Upgrade, Member: "example-0", ID: 1, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: etcdv1beta2.ReasonUpgrading},
		{name: "a patch upgrade", spec: spec(3, "3.6.17"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.6.17"}, reason: etcdv1beta2.ReasonUpgrading},
		{name: "a skipped minor is refused", spec: spec(3, "3.8.0"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonVersionSkew, failure: true, message: "skips a minor"},
		{name: "a downgrade is refused", spec: spec(3, "3.5.21"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonVersionSkew, failure: true, message: "not downgraded"},
		{name: "a joining member the spec no longer asks for is removed, shrinking back", spec: spec(2, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: pods(img3616, m(0, 1), m(1, 2))},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonScaling, message: "has not joined"},
		{name: "a learner that does not answer is removed, shrinking back", spec: spec(2, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), with(down(m(2, 3)), func(x *Member) { x.Learner = true })},
				Pods: pods(img3616, m(0, 1), m(1, 2), down(m(2, 3)))},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonScaling},
		{name: "the pod of a member re-added below the highest ordinal that started before it was added is restarted", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 4, Name: "example-1", Learner: true}, m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "4", AddedAt: nowPlus(-time.Minute)}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-2": {Ready: true},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", CrashLooping: true, Created: now.Add(-2 * time.Hour), ClaimCreated: now.Add(-2 * time.Hour)}},
				Now: now},
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: etcdv1beta2.ReasonScaling, message: "started before the member was added"},
		{name: "a learner re-added below the highest ordinal whose pod, started since, exits on the removed member's claim gets a new claim", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 4, Name: "example-1", Learner: true}, m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "4", AddedAt: nowPlus(-time.Minute)}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-2": {Ready: true},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", CrashLooping: true, Created: now.Add(-30 * time.Second), ClaimCreated: now.Add(-2 * time.Hour)}},
				Now: now},
			want:   Action{Kind: ReplaceVolume, Member: "example-1", PodUID: "uid-example-1", ClaimUID: "claim-example-1"},
			reason: etcdv1beta2.ReasonScaling, message: "Replacing the claim data-example-1 of joining member example-1"},
		{name: "a learner's pod that exits on a claim made since the member was added is left to the join timeout", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 4, Name: "example-1", Learner: true}, m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "4", AddedAt: nowPlus(-time.Minute)}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-2": {Ready: true},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", CrashLooping: true, Created: now.Add(-30 * time.Second), ClaimCreated: now.Add(-50 * time.Second)}},
				Now: now},
			reason: etcdv1beta2.ReasonScaling, message: "example-1 is joining"},
		{name: "the join timeout counts from the member's addition, not from its pod's last restart", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 4, Name: "example-1", Learner: true}, m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "4", AddedAt: nowPlus(-DefaultJoinTimeout)}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-2": {Ready: true},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", Created: now.Add(-10 * time.Second), ClaimCreated: now.Add(-2 * time.Hour)}},
				Now: now},
			want: Action{Kind: Remove, Member: "example-1", ID: 4}, reason: etcdv1beta2.ReasonScaling, message: "within 5m0s"},
		{name: "a member that has not joined within the join timeout is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-DefaultJoinTimeout)}}, Now: now},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonScaling, message: "within 5m0s"},
		{name: "a member joining for less than the join timeout is awaited", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-DefaultJoinTimeout + time.Second)}}, Now: now},
			reason: etcdv1beta2.ReasonScaling, message: "example-2 is joining"},
		{name: "a join timeout set shorter removes a member sooner", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-time.Minute)}}, Now: now, JoinTimeout: time.Minute},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: etcdv1beta2.ReasonScaling, message: "within 1m0s"},
		{name: "a NOSPACE alarm is NoSpace, not a lost quorum, and remedied", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{with(alarm(leader(m(0, 1)), AlarmNoSpace, 1), func(x *Member) { x.Revision = 5 }), m(1, 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			want:   Action{Kind: Compact, Revision: 5},
			reason: etcdv1beta2.ReasonNoSpace, message: "NOSPACE alarm (reported by example-0)"},
		{name: "a NOSPACE alarm stops a scale", spec: spec(5, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), alarm(m(2, 3), AlarmNoSpace, 0)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonNoSpace, message: "waiting for the members to report their revision"},
		{name: "a NOSPACE alarm beside one the operator does not know is not remedied", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{alarm(alarm(leader(m(0, 1)), AlarmNoSpace, 1), "OVERHEAT", 1), m(1, 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonNoSpace, failure: true, message: "also raised: OVERHEAT"},
		{name: "a CORRUPT alarm is Corrupt, naming the member it is raised for and what to do", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{alarm(leader(m(0, 1)), AlarmCorrupt, 2), alarm(m(1, 2), AlarmCorrupt, 2), alarm(m(2, 3), AlarmCorrupt, 2)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonCorrupt, failure: true,
			message: "CORRUPT alarm for member example-1 (reported by example-0, example-1, example-2): its corruption check found data that differs between members, and the cluster refuses writes"},
		{name: "a CORRUPT alarm says which claim and pod to delete", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{alarm(leader(m(0, 1)), AlarmCorrupt, 3), m(1, 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonCorrupt, failure: true, message: "kubectl delete pvc data-example-2 --wait=false, then kubectl delete pod example-2"},
		{name: "a CORRUPT alarm stops a scale, and wins over NOSPACE", spec: spec(5, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{alarm(alarm(leader(m(0, 1)), AlarmNoSpace, 1), AlarmCorrupt, 0), m(1, 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonCorrupt, failure: true, message: "also raised: NOSPACE"},
		{name: "an alarm the operator does not know is Alarm, naming it", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), alarm(m(1, 2), "OVERHEAT", 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonAlarm, failure: true, message: "etcd raised its OVERHEAT alarm (reported by example-1)"},
		{name: "members the operator cannot reach whose pods serve are MembersUnreachable", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonMembersUnreachable, failure: true, message: "cannot reach members example-1, example-2"},
		{name: "no member answering while the pods serve is MembersUnreachable", spec: spec(3, "3.6.16"),
			obs: Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}, {Name: "example-2", ID: "3"}},
				Pods: pods(img3616, three...)},
			reason: etcdv1beta2.ReasonMembersUnreachable, failure: true, message: "pods of example-0, example-1, example-2 are ready"},
		{name: "a re-created resource over the claims of members that do not answer is not seeded again", spec: spec(3, "3.6.16"),
			obs:    Observed{Claims: map[string]string{"data-example-0": "a", "data-example-1": "b"}},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true, message: "down: example-0, example-1"},
		{name: "a re-created resource over pods that do not answer is not seeded again", spec: spec(3, "3.6.16"),
			obs:    Observed{Pods: map[string]Pod{"example-2": {}}},
			reason: etcdv1beta2.ReasonQuorumLost, failure: true, message: "down: example-2"},
		{name: "3.5 before 3.5.20 does not go to 3.6", spec: spec(3, "3.6.0"),
			obs:    Observed{Reachable: true, Members: versions("3.5.19", three...), Pods: pods("quay.io/coreos/etcd:v3.5.19", three...)},
			reason: etcdv1beta2.ReasonVersionSkew, failure: true, message: "3.5.20 or later"},
		{name: "3.5.20 goes to 3.6", spec: spec(3, "3.6.0"),
			obs:  Observed{Reachable: true, Members: versions("3.5.20", three...), Pods: pods("quay.io/coreos/etcd:v3.5.20", three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.6.0"}, reason: etcdv1beta2.ReasonUpgrading},
		{name: "a version moved on to a further minor mid-upgrade is refused", spec: spec(3, "3.8.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), m(2, 3)},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: img3616, Ready: true}}},
			reason: etcdv1beta2.ReasonVersionSkew, failure: true, message: "spec.version 3.8.0 skips a minor version from the members' 3.6.16"},
		{name: "an upgrade before a scale", spec: spec(5, "3.7.0"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: etcdv1beta2.ReasonUpgrading},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.Cluster = "example"
			d := Next(tt.spec, ns, tt.obs)
			if d.Action != tt.want {
				t.Errorf("action %+v, want %+v", d.Action, tt.want)
			}
			if d.Reason != tt.reason || d.Failure != tt.failure {
				t.Errorf("reason %q failure %v, want %q %v (%s)", d.Reason, d.Failure, tt.reason, tt.failure, d.Message)
			}
			if !strings.Contains(d.Message, tt.message) {
				t.Errorf("message %q does not say %q", d.Message, tt.message)
			}
		})
	}
}

// alarm returns mem reporting the alarm name raised for member id.
func alarm(mem Member, name string, id uint64) Member {
	return with(mem, func(x *Member) { x.Alarms = append(x.Alarms, Alarm{Name: name, Member: id}) })
}

// versions returns members at version.
func versions(version string, members ...Member) []Member {
	out := make([]Member, 0, len(members))
	for _, mem := range members {
		out = append(out, with(mem, func(x *Member) { x.Version = version }))
	}
	return out
}

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// nowPlus is now moved by d, as status.members records a time.
func nowPlus(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }

func TestRecordKeepsTheClaimOfAMember(t *testing.T) {
	o := Observed{Cluster: "example", Now: now,
		Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "first"}, {Name: "example-3", ID: "4", ClaimUID: "old"},
			{Name: "example-4", ID: "5", AddedAt: nowPlus(-time.Hour)}, {Name: "example-5", ID: "6", AddedAt: nowPlus(-time.Hour)}},
		Pods: map[string]Pod{"example-0": {ClaimUID: "second"}, "example-1": {ClaimUID: "claim-1"}, "example-2": {ClaimUID: "claim-2"},
			"example-3": {ClaimUID: "restored"}}}
	got := Record(o, []Member{
		{ID: 3, Name: "example-2", Started: false},
		{ID: 2, Name: "example-1", Started: true, Healthy: true, Leader: true, Version: "3.6.16"},
		{ID: 1, Name: "example-0", Started: true, Healthy: false},
		{ID: 4, Name: "example-3", Started: true, Healthy: true},
		{ID: 5, Name: "example-4", Started: true, Learner: true},
		{ID: 6, Name: "example-5", Started: true, Healthy: true},
	})
	want := []etcdv1beta2.EtcdMember{
		// Down on another claim: the claim that held its data stays.
		{Name: "example-0", ID: "1", ClaimUID: "first"},
		{Name: "example-1", ID: "2", Healthy: true, Leader: true, Version: "3.6.16", ClaimUID: "claim-1"},
		// Not started: no claim holds its data yet; added now, as far as
		// the operator knows.
		{Name: "example-2", ID: "3", AddedAt: nowPlus(0)},
		// Healthy on another claim: its data is there.
		{Name: "example-3", ID: "4", Healthy: true, ClaimUID: "restored"},
		// A learner keeps when it was added.
		{Name: "example-4", ID: "5", Learner: true, AddedAt: nowPlus(-time.Hour)},
		// Joined: when it was added no longer matters.
		{Name: "example-5", ID: "6", Healthy: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
}

// A member removed below the highest ordinal leaves its pod and claim (the
// StatefulSet keeps them), and the claim its data. Added again, the member
// lands on them: the pod, made before the member was added, is restarted;
// its next pod exits on the removed member's data, and its claim is
// replaced; the member then joins on an empty claim. Each pass is planned
// on what the pass before recorded.
func TestAMemberAddedAgainBelowTheHighestOrdinalJoinsOnANewClaim(t *testing.T) {
	// The removed member's pod was made a minute before the add (within
	// the join timeout), or an hour before.
	for _, age := range []time.Duration{time.Minute, time.Hour} {
		t.Run(age.String(), func(t *testing.T) { addAgainBelowTheHighestOrdinal(t, age) })
	}
}

func addAgainBelowTheHighestOrdinal(t *testing.T, age time.Duration) {
	leader := with(m(0, 1), func(x *Member) { x.Leader = true })
	start := now
	o := Observed{Cluster: "example", Reachable: true, FromLeader: true, Members: []Member{leader, m(2, 3)}, Now: start,
		Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-2": {Image: img3616, Ready: true},
			// Left by the member removed an hour ago: it exits at every start.
			"example-1": {UID: "left", ClaimUID: "old-claim", CrashLooping: true, Created: start.Add(-age), ClaimCreated: start.Add(-3 * time.Hour)}},
		Claims: map[string]string{"data-example-0": "c0", "data-example-1": "old-claim", "data-example-2": "c2"}}
	o.Recorded = Record(o, o.Members)

	d := Next(spec(3, "3.6.16"), ns, o)
	if d.Action.Kind != AddLearner || d.Action.Member != "example-1" {
		t.Fatalf("first pass: %+v %s, want example-1 added", d.Action, d.Message)
	}
	o.Members = append(o.Members, Member{ID: 4, Name: "example-1", Learner: true})
	o.Recorded = Record(o, o.Members)

	steps := []struct {
		after time.Duration
		pod   Pod
		want  ActionKind
	}{
		// The pod left from before the member was added.
		{after: 2 * time.Second, pod: o.Pods["example-1"], want: RestartPod},
		// Its next pod, on the removed member's claim, exits too.
		{after: 40 * time.Second, pod: Pod{UID: "second", ClaimUID: "old-claim", CrashLooping: true, Created: start.Add(5 * time.Second), ClaimCreated: start.Add(-3 * time.Hour)},
			want: ReplaceVolume},
		// On a new claim it starts, and joins.
		{after: 60 * time.Second, pod: Pod{UID: "third", ClaimUID: "new-claim", Created: start.Add(45 * time.Second), ClaimCreated: start.Add(45 * time.Second)},
			want: None},
	}
	for _, step := range steps {
		o.Now = start.Add(step.after)
		o.Pods["example-1"] = step.pod
		d := Next(spec(3, "3.6.16"), ns, o)
		if d.Action.Kind != step.want {
			t.Fatalf("%s after the add: %+v %s, want %s", step.after, d.Action, d.Message, step.want)
		}
		o.Recorded = Record(o, o.Members)
	}
	if d := Next(spec(3, "3.6.16"), ns, o); d.Reason != etcdv1beta2.ReasonScaling || !strings.Contains(d.Message, "example-1 is joining") {
		t.Errorf("on a new claim: %s %q, want the member joining", d.Reason, d.Message)
	}
}
