package console

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/redisnode"
)

func ptr[T any](v T) *T { return &v }

// cluster is a RedisEnterpriseCluster c of three nodes, c-0 the primary,
// c-1 a healthy replica, c-2 a replica that is not healthy.
func cluster(mutate func(*redisv1alpha1.RedisEnterpriseCluster)) *redisv1alpha1.RedisEnterpriseCluster {
	o := &redisv1alpha1.RedisEnterpriseCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec:       redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3},
		Status: redisv1alpha1.RedisEnterpriseClusterStatus{State: redisv1alpha1.StateRunning, Primary: "c-0", Nodes: []redisv1alpha1.NodeStatus{
			{Name: "c-0", Role: redisv1alpha1.RolePrimary, Healthy: true},
			{Name: "c-1", Role: redisv1alpha1.RoleReplica, Healthy: true},
			{Name: "c-2", Role: redisv1alpha1.RoleReplica},
		}},
	}
	if mutate != nil {
		mutate(o)
	}
	return o
}

func TestBuildOverviewNodes(t *testing.T) {
	primary := redisnode.Info{Primary: true, Offset: 5000, Usage: redisnode.Usage{UsedMemory: 100, MaxMemory: 1000, Clients: 4, OpsPerSec: 50}}
	replica := redisnode.Info{Offset: 4000, LastIO: 2 * time.Second, Usage: redisnode.Usage{UsedMemory: 90, MaxMemory: 1000, Clients: 1, OpsPerSec: 2}}
	tests := []struct {
		name    string
		o       *redisv1alpha1.RedisEnterpriseCluster
		samples map[string]Sample
		want    []Node
	}{
		{
			name:    "should give each node its role, health and figures, and a replica's lag behind the primary",
			o:       cluster(nil),
			samples: map[string]Sample{"c-0": {Info: primary}, "c-1": {Info: replica}, "c-2": {Err: errors.New("connection refused")}},
			want: []Node{
				{UID: 1, Name: "c-0", Addr: "c-0.c-nodes", Role: "primary", Healthy: true, Answered: true, UsedMemory: 100, MaxMemory: 1000, Clients: 4, OpsPerSec: 50},
				{UID: 2, Name: "c-1", Addr: "c-1.c-nodes", Role: "replica", Healthy: true, Answered: true, UsedMemory: 90, MaxMemory: 1000, Clients: 1, OpsPerSec: 2,
					LagBytes: ptr[int64](1000), LagSeconds: ptr(2.0)},
				{UID: 3, Name: "c-2", Addr: "c-2.c-nodes", Role: "replica", Error: "connection refused"},
			},
		},
		{
			name:    "should give no lag in bytes when the primary did not answer, and none in seconds for a replica whose link is down",
			o:       cluster(nil),
			samples: map[string]Sample{"c-0": {Err: errors.New("timeout")}, "c-1": {Info: redisnode.Info{Offset: 10, LastIO: -1}}},
			want: []Node{
				{UID: 1, Name: "c-0", Addr: "c-0.c-nodes", Role: "primary", Healthy: true, Error: "timeout"},
				{UID: 2, Name: "c-1", Addr: "c-1.c-nodes", Role: "replica", Healthy: true, Answered: true},
				{UID: 3, Name: "c-2", Addr: "c-2.c-nodes", Role: "replica"},
			},
		},
		{
			name: "should list the nodes of spec.nodes the status does not know yet as unknown, and a node on its way out, by ordinal",
			o: cluster(func(o *redisv1alpha1.RedisEnterpriseCluster) {
				o.Spec.Nodes = 2
				o.Status.Nodes = []redisv1alpha1.NodeStatus{{Name: "c-10", Role: "replica"}, {Name: "c-0", Role: "primary", Healthy: true}}
			}),
			want: []Node{
				{UID: 1, Name: "c-0", Addr: "c-0.c-nodes", Role: "primary", Healthy: true},
				{UID: 2, Name: "c-1", Addr: "c-1.c-nodes", Role: "unknown"},
				{UID: 11, Name: "c-10", Addr: "c-10.c-nodes", Role: "replica"},
			},
		},
		{
			name: "should list no node of a hibernated cluster",
			o: cluster(func(o *redisv1alpha1.RedisEnterpriseCluster) {
				o.Spec.Hibernate, o.Status.Nodes = true, nil
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildOverview(tt.o, tt.samples, time.Second, time.Unix(0, 0)).Nodes
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildOverviewBackups(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	tm := func(d time.Duration) *time.Time { return ptr(now.Add(d)) }
	withBackup := func(info *redisv1alpha1.BackupInfo, annotation string) *redisv1alpha1.RedisEnterpriseCluster {
		return cluster(func(o *redisv1alpha1.RedisEnterpriseCluster) {
			o.Spec.Backup = &redisv1alpha1.Backup{Interval: 3600}
			o.Status.BackupInfo = info
			if annotation != "" {
				o.Annotations = map[string]string{redisv1alpha1.BackupNowAnnotation: annotation}
			}
		})
	}
	tests := []struct {
		name string
		o    *redisv1alpha1.RedisEnterpriseCluster
		want Backups
	}{
		{name: "should say backups are off without spec.backup", o: cluster(nil), want: Backups{}},
		{
			name: "should give the last success, where it is, and the next one due an interval after the last start",
			o: withBackup(&redisv1alpha1.BackupInfo{BackupStatus: "Succeeded", LastBackupTime: at(-10 * time.Minute), LastBackup: "s3://b/k",
				LastScheduleTime: at(-11 * time.Minute), LastRequest: "r1"}, "r1"),
			want: Backups{Configured: true, IntervalSeconds: 3600, Status: "Succeeded", LastSuccess: tm(-10 * time.Minute), Location: "s3://b/k",
				LastStart: tm(-11 * time.Minute), NextDue: tm(49 * time.Minute), LastRequest: "r1"},
		},
		{
			name: "should give the last failure and why, beside the last success, and a next one overdue as now",
			o: withBackup(&redisv1alpha1.BackupInfo{BackupStatus: "Failed", BackupFailureReason: "bucket missing", LastBackupTime: at(-3 * time.Hour),
				LastScheduleTime: at(-2 * time.Hour)}, ""),
			want: Backups{Configured: true, IntervalSeconds: 3600, Status: "Failed", LastSuccess: tm(-3 * time.Hour), LastStart: tm(-2 * time.Hour),
				LastFailure: tm(-2 * time.Hour), FailureReason: "bucket missing", NextDue: tm(0)},
		},
		{
			name: "should give a request the operator has not handled yet as pending",
			o:    withBackup(&redisv1alpha1.BackupInfo{LastRequest: "r1"}, "r2"),
			want: Backups{Configured: true, IntervalSeconds: 3600, LastRequest: "r1", PendingRequest: "r2"},
		},
		{
			name: "should give a request as pending before the operator reported any backup",
			o:    withBackup(nil, "r1"),
			want: Backups{Configured: true, IntervalSeconds: 3600, PendingRequest: "r1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BuildOverview(tt.o, nil, time.Second, now).Backup); diff != "" {
				t.Errorf("backups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildOverviewPrimaryAndSwitchover(t *testing.T) {
	changed := metav1.NewTime(time.Unix(100, 0))
	o := cluster(func(o *redisv1alpha1.RedisEnterpriseCluster) {
		o.Status.PrimaryHistory = []redisv1alpha1.PrimaryChange{{From: "c-1", To: "c-0", Reason: "Switchover", Time: changed}}
		o.Status.LastSwitchover = &switchover.Status{Request: "c-0/1", Target: "c-0", Outcome: switchover.Done}
		o.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Running"}, {Type: "Degraded", Status: "False", Reason: "AsExpected"}}
		o.Annotations = map[string]string{switchover.Annotation: "c-1/2"}
		o.Spec.TLS = &redisv1alpha1.TLS{}
	})
	got := BuildOverview(o, nil, 5*time.Second, time.Unix(200, 0))
	got.Nodes, got.Backup = nil, Backups{}
	want := Overview{
		Cluster: "c", Namespace: "ns", State: "Running", Primary: "c-0",
		Ready:      &Condition{Type: "Ready", Status: "True", Reason: "Running"},
		Conditions: []Condition{{Type: "Ready", Status: "True", Reason: "Running"}, {Type: "Degraded", Status: "False", Reason: "AsExpected"}},
		History:    o.Status.PrimaryHistory, SwitchoverTargets: []string{"c-1"}, LastSwitchover: o.Status.LastSwitchover,
		PendingSwitchover: "c-1/2", Endpoint: "c.ns.svc:6379", TLS: true, RefreshSeconds: 5, Time: time.Unix(200, 0),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("overview (-want +got):\n%s", diff)
	}
}

func TestSwitchoverTargets(t *testing.T) {
	tests := []struct {
		name  string
		nodes []redisv1alpha1.NodeStatus
		want  []string
	}{
		{name: "should offer the healthy replicas, by ordinal", nodes: []redisv1alpha1.NodeStatus{
			{Name: "c-11", Role: "replica", Healthy: true}, {Name: "c-0", Role: "primary", Healthy: true}, {Name: "c-2", Role: "replica", Healthy: true}},
			want: []string{"c-2", "c-11"}},
		{name: "should not offer a replica that is not healthy, nor a node of unknown role", nodes: []redisv1alpha1.NodeStatus{
			{Name: "c-0", Role: "primary", Healthy: true}, {Name: "c-1", Role: "replica"}, {Name: "c-2", Role: "unknown", Healthy: true}},
			want: []string{}},
		{name: "should not offer the primary the status names, whatever role it had", nodes: []redisv1alpha1.NodeStatus{
			{Name: "c-0", Role: "replica", Healthy: true}}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := cluster(func(o *redisv1alpha1.RedisEnterpriseCluster) { o.Status.Nodes = tt.nodes })
			if diff := cmp.Diff(tt.want, SwitchoverTargets(o)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUID(t *testing.T) {
	for pod, want := range map[string]int{"c-0": 1, "c-8": 9, "c-10": 11, "c-01": 0, "c--1": 0, "d-0": 0, "c-": 0, "c-x": 0, "cc-0": 0} {
		if got := UID("c", pod); got != want {
			t.Errorf("UID(c, %s) = %d, want %d", pod, got, want)
		}
	}
}
