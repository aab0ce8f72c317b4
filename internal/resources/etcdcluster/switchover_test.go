package etcdcluster

import (
	"strings"
	"testing"

	"github.com/app-operator/app-operator/api/switchover"
)

func TestNextSwitchover(t *testing.T) {
	leader := func(mem Member) Member { return with(mem, func(x *Member) { x.Leader = true }) }
	three := []Member{leader(m(0, 1)), m(1, 2), m(2, 3)}
	set := func(i int, f func(*Member)) []Member {
		out := append([]Member(nil), three...)
		f(&out[i])
		return out
	}
	tests := []struct {
		name    string
		request string
		members []Member
		size    int32
		want    Action
		why     string
	}{
		{name: "the leadership moves to the member named", request: "example-2", members: three, size: 3,
			want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}},
		{name: "any moves it to the first other healthy voter", request: switchover.Any, members: three, size: 3,
			want: Action{Kind: MoveLeader, Member: "example-1", ID: 2}},
		{name: "any skips a member that does not answer", request: switchover.Any, size: 3,
			members: set(1, func(x *Member) { x.Healthy = false }), why: "", want: Action{Kind: MoveLeader, Member: "example-2", ID: 3}},
		{name: "a name that is no member is refused", request: "example-9", members: three, size: 3, why: switchover.NotAMember},
		{name: "the leader itself is refused", request: "example-0", members: three, size: 3, why: switchover.AlreadyPrimary},
		{name: "a member that does not answer is refused", request: "example-1", size: 3,
			members: set(1, func(x *Member) { x.Healthy, x.Version = false, "" }), why: switchover.NotHealthy},
		{name: "a request waits for a step in flight", request: "example-1", size: 2, members: three,
			want: Action{Kind: Remove, Member: "example-2", ID: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Cluster: "example", Reachable: true, FromLeader: true, Members: tt.members, Pods: pods(img3616, tt.members...), Switchover: tt.request}
			d := Next(spec(tt.size, "3.6.16"), ns, obs)
			if d.Action != tt.want {
				t.Fatalf("action %+v (%s), want %+v", d.Action, d.Message, tt.want)
			}
			if (d.Action.Kind == MoveLeader) != d.Switchover {
				t.Errorf("Switchover = %v on %s", d.Switchover, d.Action.Kind)
			}
			var why string
			if d.Refusal != nil {
				why = d.Refusal.Why
				if msg := d.Refusal.Message("example-0"); !strings.Contains(msg, switchover.Annotation) || !strings.Contains(msg, tt.request) {
					t.Errorf("message %q names not the annotation and the target", msg)
				}
			}
			if why != tt.why {
				t.Errorf("refusal %q, want %q", why, tt.why)
			}
		})
	}
}
