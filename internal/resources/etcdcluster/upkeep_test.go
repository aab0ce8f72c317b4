package etcdcluster

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

const mi = int64(1) << 20

// sized is mem with a database of size MiB, inUse of it holding data, at
// revision 100.
func sized(mem Member, size, inUse int64) Member {
	return with(mem, func(x *Member) { x.DBSize, x.DBSizeInUse, x.Revision = size*mi, inUse*mi, 100 })
}

// defragRecord is status.members for members, each defragmented at the time
// at gives it (nil: never).
func defragRecord(at func(name string) *time.Time, members ...Member) []etcdv1beta2.EtcdMember {
	out := Record(Observed{Cluster: "example"}, members)
	for i := range out {
		if t := at(out[i].Name); t != nil {
			out[i].DefragmentedAt = &metav1.Time{Time: *t}
		}
	}
	return out
}

func TestNoSpaceIsRemediedStepByStep(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	compacted := &etcdv1beta2.NoSpaceRemedy{CompactedAt: metav1.Time{Time: now.Add(-time.Minute)}, CompactedRevision: 100}
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	full := func(mem Member) Member { return alarm(sized(mem, 1800, 1000), AlarmNoSpace, 0) }
	// The leader is example-1: it goes last.
	members := []Member{full(m(0, 1)), full(leader(m(1, 2))), full(m(2, 3))}
	before, after := now.Add(-time.Hour), now.Add(-30*time.Second)
	defragged := func(names ...string) func(string) *time.Time {
		return func(n string) *time.Time {
			for _, x := range names {
				if x == n {
					return &after
				}
			}
			return &before
		}
	}
	tests := []struct {
		name    string
		members []Member
		remedy  *etcdv1beta2.NoSpaceRemedy
		done    func(string) *time.Time
		want    Action
		failure bool
		message string
	}{
		{name: "first: compact to the highest revision", members: members, done: defragged(),
			want: Action{Kind: Compact, Revision: 100}, message: "remedying: compacting the history before revision 100"},
		{name: "then the followers, by ordinal", members: members, remedy: compacted, done: defragged(),
			want: Action{Kind: Defragment, Member: "example-0", ID: 1}, message: "compacted to revision 100, defragmenting example-0 (1/3)"},
		{name: "a defragmentation before the compaction does not count", members: members, remedy: compacted,
			done: func(string) *time.Time { return &before },
			want: Action{Kind: Defragment, Member: "example-0", ID: 1}, message: "(1/3)"},
		{name: "a half-done round goes on", members: members, remedy: compacted, done: defragged("example-0"),
			want: Action{Kind: Defragment, Member: "example-2", ID: 3}, message: "defragmenting example-2 (2/3)"},
		{name: "the leader last", members: members, remedy: compacted, done: defragged("example-0", "example-2"),
			want: Action{Kind: Defragment, Member: "example-1", ID: 2}, message: "defragmenting example-1 (3/3)"},
		{name: "every member defragmented: disarm", members: members, remedy: compacted, done: defragged("example-0", "example-1", "example-2"),
			want: Action{Kind: Disarm}, message: "3/3 members defragmented, disarming the alarm"},
		{name: "a member down: wait, nothing done", members: []Member{full(m(0, 1)), full(leader(m(1, 2))), with(m(2, 3), func(x *Member) { x.Healthy = false })},
			done: defragged(), message: "waiting for members example-2 to be started and healthy"},
		{name: "live data that fills the quota is not disarmed",
			members: []Member{full(m(0, 1)), alarm(sized(leader(m(1, 2)), 1700, 1700), AlarmNoSpace, 0), full(m(2, 3))},
			remedy:  compacted, done: defragged("example-0", "example-1", "example-2"), failure: true,
			message: "member example-1 still holds 1700Mi of live data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Observed{Cluster: "example", Reachable: true, Members: tt.members, Pods: pods(img3616, tt.members...),
				Recorded: defragRecord(tt.done, tt.members...), Remedy: tt.remedy, Now: now}
			d := Next(spec(3, "3.6.16"), ns, o)
			if d.Action != tt.want {
				t.Errorf("action %+v, want %+v", d.Action, tt.want)
			}
			if d.Reason != etcdv1beta2.ReasonNoSpace || d.Failure != tt.failure {
				t.Errorf("reason %q failure %v, want NoSpace %v (%s)", d.Reason, d.Failure, tt.failure, d.Message)
			}
			if !strings.Contains(d.Message, tt.message) || !strings.Contains(d.Message, "refuses writes and serves reads") {
				t.Errorf("message %q does not say %q", d.Message, tt.message)
			}
		})
	}
}

func TestDefragmentationOnSchedule(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	// 60% free pages in 500Mi: due, by the defaults.
	frag := func(mem Member) Member { return sized(mem, 500, 200) }
	lean := func(mem Member) Member { return sized(mem, 500, 400) }
	never := func(string) *time.Time { return nil }
	at := func(d time.Duration, names ...string) func(string) *time.Time {
		return func(n string) *time.Time {
			for _, x := range names {
				if x == n {
					t := now.Add(-d)
					return &t
				}
			}
			return nil
		}
	}
	tests := []struct {
		name        string
		maintenance *etcdv1beta2.MaintenancePolicy
		members     []Member
		done        func(string) *time.Time
		notReady    string
		want        Action
	}{
		{name: "a fragmented follower first", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))}, done: never,
			want: Action{Kind: Defragment, Member: "example-1", ID: 2}},
		{name: "the leader last", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))}, done: at(time.Hour, "example-1", "example-2"),
			want: Action{Kind: Defragment, Member: "example-0", ID: 1}},
		{name: "not twice within the interval", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))},
			done: at(time.Hour, "example-0", "example-1", "example-2")},
		{name: "again once the interval has passed", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))},
			done: at(7*time.Hour, "example-0", "example-1", "example-2"), want: Action{Kind: Defragment, Member: "example-1", ID: 2}},
		{name: "a shorter interval", maintenance: &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{MinInterval: &metav1.Duration{Duration: 30 * time.Minute}}},
			members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))},
			done:    at(time.Hour, "example-0", "example-1", "example-2"), want: Action{Kind: Defragment, Member: "example-1", ID: 2}},
		{name: "below the threshold: none", members: []Member{lean(leader(m(0, 1))), lean(m(1, 2)), lean(m(2, 3))}, done: never},
		{name: "a lower threshold", maintenance: &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{FragmentedPercent: ptr.To[int32](20)}},
			members: []Member{lean(leader(m(0, 1))), lean(m(1, 2)), lean(m(2, 3))}, done: never, want: Action{Kind: Defragment, Member: "example-1", ID: 2}},
		{name: "a small database: none", members: []Member{sized(leader(m(0, 1)), 40, 1), sized(m(1, 2), 40, 1), sized(m(2, 3), 40, 1)}, done: never},
		{name: "a smaller minimal size", maintenance: &etcdv1beta2.MaintenancePolicy{Defragmentation: &etcdv1beta2.DefragmentationPolicy{MinSize: ptr.To(resource.MustParse("1Mi"))}},
			members: []Member{sized(leader(m(0, 1)), 40, 1), sized(m(1, 2), 40, 1), sized(m(2, 3), 40, 1)}, done: never,
			want: Action{Kind: Defragment, Member: "example-1", ID: 2}},
		{name: "a member unhealthy: none", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), with(frag(m(2, 3)), func(x *Member) { x.Healthy = false })}, done: never},
		{name: "a pod not ready: none", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2)), frag(m(2, 3))}, done: never, notReady: "example-2"},
		{name: "a scale first", members: []Member{frag(leader(m(0, 1))), frag(m(1, 2))}, done: never,
			want: Action{Kind: AddLearner, Member: "example-2", PeerURL: "http://example-2.example.ns.svc:2380"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pods(img3616, tt.members...)
			if tt.notReady != "" {
				pod := p[tt.notReady]
				pod.Ready = false
				p[tt.notReady] = pod
			}
			s := spec(3, "3.6.16")
			s.Maintenance = tt.maintenance
			o := Observed{Cluster: "example", Reachable: true, Members: tt.members, Pods: p, Recorded: defragRecord(tt.done, tt.members...), Now: now}
			d := Next(s, ns, o)
			if d.Action != tt.want {
				t.Errorf("action %+v, want %+v (%s)", d.Action, tt.want, d.Message)
			}
			if tt.want.Kind == Defragment && (!d.Done() || !strings.Contains(d.Message, "defragmenting "+tt.want.Member)) {
				t.Errorf("decision %+v: want the cluster at its spec (Ready), saying which member is defragmented", d)
			}
		})
	}
}

func TestRemedyRecordGoesWithTheAlarm(t *testing.T) {
	r := &etcdv1beta2.NoSpaceRemedy{CompactedRevision: 7}
	withAlarm := Observed{Reachable: true, Members: []Member{alarm(m(0, 1), AlarmNoSpace, 1)}, Remedy: r}
	if RemedyRecord(withAlarm) != r {
		t.Error("alarm raised: want the remedy kept")
	}
	if RemedyRecord(Observed{Remedy: r}) != r {
		t.Error("no member answers: want the remedy kept")
	}
	if RemedyRecord(Observed{Reachable: true, Members: []Member{m(0, 1)}, Remedy: r}) != nil {
		t.Error("alarm gone: want the remedy cleared")
	}
}

func TestRecordKeepsWhenAMemberWasDefragmented(t *testing.T) {
	at := metav1.Time{Time: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	o := Observed{Cluster: "example", Recorded: []etcdv1beta2.EtcdMember{{Name: "example-0", ID: "1", DefragmentedAt: &at}}}
	got := Record(o, []Member{m(0, 1), m(1, 2)})
	if got[0].DefragmentedAt == nil || !got[0].DefragmentedAt.Equal(&at) || got[1].DefragmentedAt != nil {
		t.Errorf("recorded %+v: want example-0 defragmented at %s, example-1 never", got, at)
	}
}

// A learner is not defragmented in a NOSPACE remedy: etcd refuses the
// call from one.
func TestNoSpaceRemedyLeavesLearnersOut(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	compacted := &etcdv1beta2.NoSpaceRemedy{CompactedAt: metav1.Time{Time: now.Add(-time.Minute)}, CompactedRevision: 100}
	full := func(mem Member) Member { return alarm(sized(mem, 1800, 1000), AlarmNoSpace, 0) }
	members := []Member{full(with(m(0, 1), func(x *Member) { x.Leader = true })), full(m(1, 2)), full(with(m(2, 3), func(x *Member) { x.Learner = true }))}
	after := now.Add(-30 * time.Second)
	done := func(n string) *time.Time {
		if n == "example-2" {
			return nil
		}
		return &after
	}
	o := Observed{Cluster: "example", Reachable: true, Members: members, Pods: pods(img3616, members...),
		Recorded: defragRecord(done, members...), Remedy: compacted, Now: now}
	if d := Next(spec(3, "3.6.16"), ns, o); d.Action.Kind != Disarm || !strings.Contains(d.Message, "2/2 members defragmented") {
		t.Errorf("decision %+v: want the alarm disarmed, the learner left out", d)
	}
}
