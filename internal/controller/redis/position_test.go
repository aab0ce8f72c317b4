package redis

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// TestPositionOf checks where a node's position comes from: what it
// answers once that says something, else its lineage container's report,
// as long as Redis has not restarted in the pod since.
func TestPositionOf(t *testing.T) {
	podWith := func(report string, restarts int32) *corev1.Pod {
		p := &corev1.Pod{}
		if report != "" {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: redisbackup.LineageContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: report}}}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: redisenterprisecluster.ContainerName, RestartCount: restarts}}
		return p
	}
	booted := redisnode.Info{ReplID: "fresh", SecondOffset: -1}
	tests := []struct {
		name string
		info redisnode.Info
		pod  *corev1.Pod
		want redisenterprisecluster.Position
		// unknown: the position must not be known.
		unknown bool
	}{
		{name: "a primary's answer", info: redisnode.Info{Primary: true, ReplID: "h2", ReplID2: "h1", SecondOffset: 11}, pod: podWith("", 0),
			want: redisenterprisecluster.Position{Known: true, ReplID: "h2", ReplID2: "h1", SecondOffset: 11, Source: "live"}},
		{name: "a replica that replicated since it started", info: redisnode.Info{ReplID: "h1", Offset: 40, SecondOffset: -1}, pod: podWith(`{"known":true,"replicationID":"h0","offset":3}`, 0),
			want: redisenterprisecluster.Position{Known: true, ReplID: "h1", Offset: 40, SecondOffset: -1, Source: "live"}},
		{name: "a node just started: what its data folder said", info: booted, pod: podWith(`{"known":true,"replicationID":"h1","offset":37013}`, 0),
			want: redisenterprisecluster.Position{Known: true, ReplID: "h1", Offset: 37013, SecondOffset: -1, Source: "disk"}},
		{name: "a node started on an empty folder", info: booted, pod: podWith(`{"known":true,"empty":true}`, 0),
			want: redisenterprisecluster.Position{Known: true, Empty: true, SecondOffset: -1, Source: "disk"}},
		{name: "a folder whose position was not known", info: booted, pod: podWith(`{"known":false,"why":"writes reached the append-only file after the last RDB"}`, 0),
			unknown: true},
		{name: "Redis restarted in the pod since the folder was read", info: booted, pod: podWith(`{"known":true,"replicationID":"h1","offset":5}`, 1),
			unknown: true},
		{name: "a report that cannot be read", info: booted, pod: podWith("oops", 0), unknown: true},
		{name: "no report", info: booted, pod: podWith("", 0), unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := positionOf(tt.info, tt.pod)
			if tt.unknown {
				if got.Known || got.Source == "" {
					t.Fatalf("got %+v, want unknown with a reason", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("position (-want +got):\n%s", diff)
			}
		})
	}
}
