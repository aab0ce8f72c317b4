package etcdcluster

import (
	"strings"
	"testing"
	"time"

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
			want: Action{Kind: Seed, Member: "example-0"}, reason: ReasonScaling},
		{name: "the seed is awaited", spec: spec(3, "3.6.16"),
			obs:    Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0"}}},
			reason: ReasonScaling, message: "Waiting for seed member example-0"},
		{name: "a cluster of one grows by a learner", spec: spec(3, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1))}, Pods: pods(img3616, m(0, 1))},
			want: Action{Kind: AddLearner, Member: "example-1", PeerURL: "http://example-1.example.ns.svc:2380"}, reason: ReasonScaling},
		{name: "before 3.4 a member is added as a voter", spec: spec(3, "3.3.25"),
			obs: Observed{Reachable: true, Members: []Member{with(leader(m(0, 1)), func(x *Member) { x.Version = "3.3.25" })},
				Pods: pods("quay.io/coreos/etcd:v3.3.25", m(0, 1))},
			want: Action{Kind: AddMember, Member: "example-1", PeerURL: "http://example-1.example.ns.svc:2380"}, reason: ReasonScaling},
		{name: "a member that has not started yet is awaited", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 2, Name: "example-1", Learner: true}},
				Pods: pods(img3616, m(0, 1))},
			reason: ReasonScaling, message: "example-1 is joining"},
		{name: "the pod of a joining member that waits out a crash loop is restarted", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), {ID: 2, Name: "example-1", Learner: true}},
				Pods: map[string]Pod{"example-0": {UID: "uid-example-0"}, "example-1": {UID: "uid-example-1", CrashLooping: true}}},
			want: Action{Kind: RestartPod, Member: "example-1", PodUID: "uid-example-1"}, reason: ReasonScaling},
		{name: "a started learner is promoted", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Learner = true })},
				Pods: pods(img3616, m(0, 1), m(1, 2))},
			want: Action{Kind: Promote, Member: "example-1", ID: 2}, reason: ReasonScaling},
		{name: "at the spec nothing is done", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)}},
		{name: "growing to five adds the lowest free ordinal", spec: spec(5, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(2, 3), m(1, 2)}, Pods: pods(img3616, three...)},
			want: Action{Kind: AddLearner, Member: "example-3", PeerURL: "http://example-3.example.ns.svc:2380"}, reason: ReasonScaling},
		{name: "growing past the claims of the members adds a member", spec: spec(4, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...),
				Claims: map[string]string{"data-example-0": "claim-example-0", "data-example-1": "claim-example-1", "data-example-2": "claim-example-2"}},
			want: Action{Kind: AddLearner, Member: "example-3", PeerURL: "http://example-3.example.ns.svc:2380"}, reason: ReasonScaling},
		{name: "a member removed from the end is added again only once its claim is gone", spec: spec(4, "3.6.16"),
			obs: Observed{Reachable: true, Members: three, Pods: pods(img3616, three...),
				Claims: map[string]string{"data-example-0": "claim-example-0", "data-example-1": "claim-example-1", "data-example-2": "claim-example-2", "data-example-3": "removed"}},
			reason: ReasonScaling, message: "delete the pod and claim data-example-3"},
		{name: "a member removed from the end is added again only once its pod is gone", spec: spec(4, "3.6.16"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, append(append([]Member{}, three...), m(3, 4))...)},
			reason: ReasonScaling, message: "before adding example-3 again"},
		{name: "a gap is filled first", spec: spec(3, "3.6.16"),
			obs:  Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(2, 3)}, Pods: pods(img3616, three...)},
			want: Action{Kind: AddLearner, Member: "example-1", PeerURL: "http://example-1.example.ns.svc:2380"}, reason: ReasonScaling},
		{name: "shrinking removes the highest ordinal", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: append(append([]Member{}, three...), m(3, 4), m(4, 5)),
				Pods: pods(img3616, append(append([]Member{}, three...), m(3, 4), m(4, 5))...)},
			want: Action{Kind: Remove, Member: "example-4", ID: 5}, reason: ReasonScaling},
		{name: "the leader hands over before it is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{m(0, 1), m(1, 2), m(2, 3), leader(m(3, 4))},
				Pods: pods(img3616, m(0, 1), m(1, 2), m(2, 3), m(3, 4))},
			want: Action{Kind: MoveLeader, Member: "example-0", ID: 1}, reason: ReasonScaling},
		{name: "removing from two members is refused", spec: spec(1, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2)}, Pods: pods(img3616, m(0, 1), m(1, 2))},
			reason: ReasonScaleInRefused, failure: true, message: "a cluster of two cannot remove one safely"},
		{name: "no change without every member healthy", spec: spec(5, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3))}, Pods: pods(img3616, leader(m(0, 1)), m(1, 2), down(m(2, 3)))},
			reason: ReasonMemberUnhealthy, message: "example-2"},
		{name: "a member the operator cannot reach whose pod serves is MembersUnreachable, beside a quorum it reaches", spec: spec(5, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3))}, Pods: pods(img3616, three...)},
			reason: ReasonMembersUnreachable, failure: true, message: "cannot reach members example-2, whose pods are ready"},
		{name: "a member down beside one out of reach is MemberUnhealthy", spec: spec(5, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), down(m(2, 3)), down(m(3, 4)), m(4, 5)},
				Pods: pods(img3616, leader(m(0, 1)), m(1, 2), m(2, 3), down(m(3, 4)), m(4, 5))},
			reason: ReasonMemberUnhealthy, message: "example-2, example-3"},
		{name: "two of three down is a lost quorum", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{m(0, 1), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, m(0, 1), down(m(1, 2)), down(m(2, 3)))},
			reason: ReasonQuorumLost, failure: true, message: "down: example-1, example-2."},
		{name: "a member up without a leader is named so", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{with(m(0, 1), func(x *Member) { x.Healthy = false }), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, down(m(0, 1)), down(m(1, 2)), down(m(2, 3)))},
			reason: ReasonQuorumLost, failure: true, message: "0 of 3 voting members are healthy, 2 needed for a quorum; down: example-1, example-2; up without a leader: example-0."},
		{name: "no member answering is a lost quorum", spec: spec(3, "3.6.16"),
			obs:    Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2"}, {Name: "example-0", ID: "1"}}},
			reason: ReasonQuorumLost, failure: true, message: "down: example-0, example-1"},
		{name: "a lost quorum wins over a shrink", spec: spec(1, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{m(0, 1), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, m(0, 1), down(m(1, 2)), down(m(2, 3)))},
			reason: ReasonQuorumLost, failure: true},
		{name: "a member whose pod came back on a new claim is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "claim-example-0"}, {Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, three...)},
			want: Action{Kind: Remove, Member: "example-1", ID: 2}, reason: ReasonReplacing},
		{name: "a member whose pod was replaced on its own claim is awaited, not replaced", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "claim-example-1"}},
				Pods:     map[string]Pod{"example-0": {}, "example-1": {UID: "new pod", ClaimUID: "claim-example-1"}, "example-2": {}}},
			reason: ReasonMemberUnhealthy},
		{name: "a member healthy on a new claim (its data restored there) is kept", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: three,
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, three...)}},
		{name: "a member whose claim is not there yet waits", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     map[string]Pod{"example-0": {}, "example-1": {UID: "new pod"}, "example-2": {}}},
			reason: ReasonMemberUnhealthy},
		{name: "a member whose pod is gone waits for the StatefulSet", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "old"}},
				Pods:     pods(img3616, m(0, 1), m(2, 3))},
			reason: ReasonMemberUnhealthy},
		{name: "a member stranded on a gone node gets a new volume", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Recorded: []etcdv1beta2.EtcdMember{{Name: "example-1", ID: "2", ClaimUID: "claim-example-1"}},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			want:   Action{Kind: ReplaceVolume, Member: "example-1", PodUID: "uid-example-1", ClaimUID: "claim-example-1"},
			reason: ReasonReplacing, message: "node n1, which is gone"},
		{name: "a stranded member without a quorum is no reason to change anything", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(down(m(0, 1))), down(m(1, 2)), m(2, 3)},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", ClaimUID: "claim-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			reason: ReasonQuorumLost, failure: true},
		{name: "a stranded member's volume is replaced only once its claim is read", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), m(2, 3)},
				Pods: map[string]Pod{"example-0": {}, "example-2": {},
					"example-1": {UID: "uid-example-1", Stranded: "its volume is local to node n1, which is gone"}}},
			reason: ReasonMemberUnhealthy},
		{name: "an upgrade starts with a follower", spec: spec(3, "3.7.0"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: ReasonUpgrading},
		{name: "an upgrade waits for the member it restarted", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: three, Pods: map[string]Pod{
				"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: img3616, Ready: true}}},
			reason: ReasonUpgrading, message: "example-1 is restarting"},
		{name: "an upgrade waits for the pod it restarted to be ready", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), m(2, 3)},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0"}, "example-2": {Image: img3616, Ready: true}}},
			reason: ReasonUpgrading, message: "example-1 is restarting"},
		{name: "an upgrade waits for a member just promoted, healthy, whose pod is not ready yet", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: three, Pods: map[string]Pod{
				"example-0": {Image: img3616, Ready: true}, "example-1": {Image: img3616, Ready: true}, "example-2": {Image: img3616}}},
			reason: ReasonUpgrading, message: "Waiting for the pod of member example-2 to be ready"},
		{name: "an upgrade ends with the leader", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), with(m(2, 3), func(x *Member) { x.Version = "3.7.0" })},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}}},
			want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}, reason: ReasonUpgrading, message: "before upgrading example-0"},
		{name: "the former leader is upgraded last", spec: spec(3, "3.7.0"),
			obs: Observed{Reachable: true, Members: []Member{m(0, 1), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), with(leader(m(2, 3)), func(x *Member) { x.Version = "3.7.0" })},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}}},
			want: Action{Kind: Upgrade, Member: "example-0", ID: 1, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: ReasonUpgrading},
		{name: "a patch upgrade", spec: spec(3, "3.6.17"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.6.17"}, reason: ReasonUpgrading},
		{name: "a skipped minor is refused", spec: spec(3, "3.8.0"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			reason: ReasonVersionSkew, failure: true, message: "skips a minor"},
		{name: "a downgrade is refused", spec: spec(3, "3.5.21"),
			obs:    Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			reason: ReasonVersionSkew, failure: true, message: "not downgraded"},
		{name: "a joining member the spec no longer asks for is removed, shrinking back", spec: spec(2, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: pods(img3616, m(0, 1), m(1, 2))},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: ReasonScaling, message: "has not joined"},
		{name: "a learner that does not answer is removed, shrinking back", spec: spec(2, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), with(down(m(2, 3)), func(x *Member) { x.Learner = true })},
				Pods: pods(img3616, m(0, 1), m(1, 2), down(m(2, 3)))},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: ReasonScaling},
		{name: "a member that has not joined within the join timeout is removed", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-DefaultJoinTimeout)}}, Now: now},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: ReasonScaling, message: "within 5m0s"},
		{name: "a member joining for less than the join timeout is awaited", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-DefaultJoinTimeout + time.Second)}}, Now: now},
			reason: ReasonScaling, message: "example-2 is joining"},
		{name: "a join timeout set shorter removes a member sooner", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), {ID: 3, Name: "example-2", Learner: true}},
				Pods: map[string]Pod{"example-0": {Ready: true}, "example-1": {Ready: true}, "example-2": {UID: "p", Created: now.Add(-time.Minute)}}, Now: now, JoinTimeout: time.Minute},
			want: Action{Kind: Remove, Member: "example-2", ID: 3}, reason: ReasonScaling, message: "within 1m0s"},
		{name: "a NOSPACE alarm is NoSpace, not a lost quorum", spec: spec(3, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{with(leader(m(0, 1)), func(x *Member) { x.Alarms = []string{AlarmNoSpace} }), m(1, 2), m(2, 3)},
				Pods: pods(img3616, three...)},
			reason: ReasonNoSpace, failure: true, message: "NOSPACE alarm (reported by example-0)"},
		{name: "a NOSPACE alarm stops a scale", spec: spec(5, "3.6.16"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), m(1, 2), with(m(2, 3), func(x *Member) { x.Alarms = []string{AlarmNoSpace} })},
				Pods: pods(img3616, three...)},
			reason: ReasonNoSpace, failure: true},
		{name: "members the operator cannot reach whose pods serve are MembersUnreachable", spec: spec(3, "3.6.16"),
			obs:    Observed{Reachable: true, Members: []Member{leader(m(0, 1)), down(m(1, 2)), down(m(2, 3))}, Pods: pods(img3616, three...)},
			reason: ReasonMembersUnreachable, failure: true, message: "cannot reach members example-1, example-2"},
		{name: "no member answering while the pods serve is MembersUnreachable", spec: spec(3, "3.6.16"),
			obs: Observed{Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1"}, {Name: "example-1", ID: "2"}, {Name: "example-2", ID: "3"}},
				Pods: pods(img3616, three...)},
			reason: ReasonMembersUnreachable, failure: true, message: "pods of example-0, example-1, example-2 are ready"},
		{name: "a re-created resource over the claims of members that do not answer is not seeded again", spec: spec(3, "3.6.16"),
			obs:    Observed{Claims: map[string]string{"data-example-0": "a", "data-example-1": "b"}},
			reason: ReasonQuorumLost, failure: true, message: "down: example-0, example-1"},
		{name: "a re-created resource over pods that do not answer is not seeded again", spec: spec(3, "3.6.16"),
			obs:    Observed{Pods: map[string]Pod{"example-2": {}}},
			reason: ReasonQuorumLost, failure: true, message: "down: example-2"},
		{name: "3.5 before 3.5.20 does not go to 3.6", spec: spec(3, "3.6.0"),
			obs:    Observed{Reachable: true, Members: versions("3.5.19", three...), Pods: pods("quay.io/coreos/etcd:v3.5.19", three...)},
			reason: ReasonVersionSkew, failure: true, message: "3.5.20 or later"},
		{name: "3.5.20 goes to 3.6", spec: spec(3, "3.6.0"),
			obs:  Observed{Reachable: true, Members: versions("3.5.20", three...), Pods: pods("quay.io/coreos/etcd:v3.5.20", three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.6.0"}, reason: ReasonUpgrading},
		{name: "a version moved on to a further minor mid-upgrade is refused", spec: spec(3, "3.8.0"),
			obs: Observed{Reachable: true, Members: []Member{leader(m(0, 1)), with(m(1, 2), func(x *Member) { x.Version = "3.7.0" }), m(2, 3)},
				Pods: map[string]Pod{"example-0": {Image: img3616, Ready: true}, "example-1": {Image: "quay.io/coreos/etcd:v3.7.0", Ready: true}, "example-2": {Image: img3616, Ready: true}}},
			reason: ReasonVersionSkew, failure: true, message: "spec.version 3.8.0 skips a minor version from the members' 3.6.16"},
		{name: "an upgrade before a scale", spec: spec(5, "3.7.0"),
			obs:  Observed{Reachable: true, Members: three, Pods: pods(img3616, three...)},
			want: Action{Kind: Upgrade, Member: "example-1", ID: 2, Image: "quay.io/coreos/etcd:v3.7.0"}, reason: ReasonUpgrading},
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

// versions returns members at version.
func versions(version string, members ...Member) []Member {
	out := make([]Member, 0, len(members))
	for _, mem := range members {
		out = append(out, with(mem, func(x *Member) { x.Version = version }))
	}
	return out
}

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestParseVersion(t *testing.T) {
	for s, ok := range map[string]bool{"3.2.13": true, "3.6.0": true, "10.0.1": true, "3.6": false, "v3.6.0": false, "3.06.0": false, "3.6.0-rc": false, "": false, "3..1": false} {
		if _, got := ParseVersion(s); got != ok {
			t.Errorf("ParseVersion(%q) ok = %v, want %v", s, got, ok)
		}
	}
}

func TestRecordKeepsTheClaimOfAMember(t *testing.T) {
	o := Observed{Cluster: "example",
		Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", ClaimUID: "first"}, {Name: "example-3", ID: "4", ClaimUID: "old"}},
		Pods: map[string]Pod{"example-0": {ClaimUID: "second"}, "example-1": {ClaimUID: "claim-1"}, "example-2": {ClaimUID: "claim-2"},
			"example-3": {ClaimUID: "restored"}}}
	got := Record(o, []Member{
		{ID: 3, Name: "example-2", Started: false},
		{ID: 2, Name: "example-1", Started: true, Healthy: true, Leader: true, Version: "3.6.16"},
		{ID: 1, Name: "example-0", Started: true, Healthy: false},
		{ID: 4, Name: "example-3", Started: true, Healthy: true},
	})
	want := []etcdv1beta2.EtcdMember{
		// Down on another claim: the claim that held its data stays.
		{Name: "example-0", ID: "1", ClaimUID: "first"},
		{Name: "example-1", ID: "2", Healthy: true, Leader: true, Version: "3.6.16", ClaimUID: "claim-1"},
		// Not started: no claim holds its data yet.
		{Name: "example-2", ID: "3"},
		// Healthy on another claim: its data is there.
		{Name: "example-3", ID: "4", Healthy: true, ClaimUID: "restored"},
	}
	if len(got) != len(want) {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
