package redis

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// TestPrimaryDown checks how long a primary counts as down after a series
// of looks: from the first look that found it down, or from when its
// replicas last heard from it once a second look confirms it.
func TestPrimaryDown(t *testing.T) {
	type look struct {
		at      time.Duration // since the start
		primary string
		down    bool
		unheard time.Duration
	}
	tests := []struct {
		name  string
		looks []look
		want  time.Duration // after the last look
	}{
		{
			name:  "should count from the first look without the replicas' account",
			looks: []look{{0, "r-0", true, 0}, {5 * time.Second, "r-0", true, 0}},
			want:  5 * time.Second,
		},
		{
			name:  "should not take the replicas' account at the first look alone",
			looks: []look{{0, "r-0", true, 20 * time.Second}},
			want:  0,
		},
		{
			name:  "should not take it at a second look sooner than a second after the first",
			looks: []look{{0, "r-0", true, 20 * time.Second}, {500 * time.Millisecond, "r-0", true, 20 * time.Second}},
			want:  500 * time.Millisecond,
		},
		{
			name:  "should count from when the replicas last heard once a second look confirms it",
			looks: []look{{0, "r-0", true, 8 * time.Second}, {time.Second, "r-0", true, 9 * time.Second}},
			want:  9 * time.Second,
		},
		{
			name:  "should start again once the primary is up",
			looks: []look{{0, "r-0", true, 8 * time.Second}, {time.Second, "r-0", false, 0}, {2 * time.Second, "r-0", true, 0}, {4 * time.Second, "r-0", true, 0}},
			want:  2 * time.Second,
		},
		{
			name:  "should start again for another primary",
			looks: []look{{0, "r-0", true, 0}, {10 * time.Second, "r-1", true, 0}, {13 * time.Second, "r-1", true, 0}},
			want:  3 * time.Second,
		},
	}
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	start := time.Now()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &primaryDown{}
			var got time.Duration
			for _, l := range tt.looks {
				got = p.observe(key, l.primary, l.down, l.unheard, start.Add(l.at))
			}
			if got != tt.want {
				t.Errorf("down for %s, want %s", got, tt.want)
			}
		})
	}
}

// TestUnheardFor checks the replicas' account of a silent primary: the
// least of their silences, and none when a replica's link is down.
func TestUnheardFor(t *testing.T) {
	replica := func(name string, linkUp bool, lastIO time.Duration) redisNode {
		return redisNode{plan: redisenterprisecluster.Node{Name: name, Answered: true, Follows: "r-0", LinkUp: linkUp}, lastIO: lastIO}
	}
	primary := redisNode{plan: redisenterprisecluster.Node{Name: "r-0"}}
	tests := []struct {
		name  string
		nodes []redisNode
		want  time.Duration
	}{
		{"should take the least of the replicas' silences", []redisNode{primary, replica("r-1", true, 14*time.Second), replica("r-2", true, 9*time.Second)}, 9 * time.Second},
		{"should have none when a replica's link is down", []redisNode{primary, replica("r-1", true, 14*time.Second), replica("r-2", false, -1)}, 0},
		{"should have none without a replica that answered", []redisNode{primary, {plan: redisenterprisecluster.Node{Name: "r-1", Follows: "r-0"}}}, 0},
		{"should leave out a node that follows another", []redisNode{primary, replica("r-1", true, 14*time.Second),
			{plan: redisenterprisecluster.Node{Name: "r-2", Answered: true, Follows: "r-1", LinkUp: true}, lastIO: 0}}, 14 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unheardFor("r-0", tt.nodes); got != tt.want {
				t.Errorf("unheard for %s, want %s", got, tt.want)
			}
		})
	}
}
