package console

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// Overview is what the page shows and the REST API answers from: the
// resource's status and spec, and what each node's INFO said.
type Overview struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	// State is status.state.
	State string `json:"state"`
	// Ready is the Ready condition; nil when the operator has not set it.
	Ready *Condition `json:"ready,omitempty"`
	// Conditions are every condition of the status.
	Conditions []Condition `json:"conditions"`
	// Primary is status.primary.
	Primary string `json:"primary"`
	// Nodes are the nodes, in the order of their ordinals.
	Nodes []Node `json:"nodes"`
	// History is status.primaryHistory, newest first.
	History []redisv1alpha1.PrimaryChange `json:"primaryHistory"`
	// Backup is what the operator knows of the backups.
	Backup Backups `json:"backup"`
	// SwitchoverTargets are the replicas a switchover may move the
	// primary to: healthy replicas, in sync per status.
	SwitchoverTargets []string `json:"switchoverTargets"`
	// LastSwitchover is status.lastSwitchover.
	LastSwitchover *switchover.Status `json:"lastSwitchover,omitempty"`
	// PendingSwitchover is the switchover annotation's value when the
	// operator has not handled it yet.
	PendingSwitchover string `json:"pendingSwitchover,omitempty"`
	// Endpoint is the host and port clients reach the primary at; TLS
	// whether they must use TLS.
	Endpoint string `json:"endpoint"`
	TLS      bool   `json:"tls"`
	// RefreshSeconds is how often the page asks for a new overview.
	RefreshSeconds float64 `json:"refreshSeconds"`
	// Time is when the overview was made.
	Time time.Time `json:"time"`
}

// Condition is one condition of the status.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Node is one node: its role and health as the status gives them, and
// the figures of its last INFO.
type Node struct {
	// UID is the node's number, 1 to n, as Redis Enterprise numbers
	// nodes: its ordinal plus one.
	UID  int    `json:"uid"`
	Name string `json:"name"`
	// Addr is the node's host, through the cluster's headless Service.
	Addr    string `json:"addr"`
	Role    string `json:"role"`
	Healthy bool   `json:"healthy"`
	// Answered is whether the node answered its last INFO; Error says
	// why not.
	Answered bool   `json:"answered"`
	Error    string `json:"error,omitempty"`
	// UsedMemory and MaxMemory are in bytes (MaxMemory 0: no limit).
	UsedMemory int64 `json:"usedMemory"`
	MaxMemory  int64 `json:"maxMemory"`
	Clients    int64 `json:"clients"`
	OpsPerSec  int64 `json:"opsPerSec"`
	// LagBytes is, for a replica, how far its offset is behind its
	// primary's; LagSeconds how long ago its primary last sent it
	// anything. Nil when unknown (a primary, a node that did not answer).
	LagBytes   *int64   `json:"lagBytes,omitempty"`
	LagSeconds *float64 `json:"lagSeconds,omitempty"`
}

// Backups is what the status says of the backups, and when the next one
// is due.
type Backups struct {
	// Configured is whether spec.backup is set: backups run, and one may
	// be asked for.
	Configured bool `json:"configured"`
	// IntervalSeconds is the time between two scheduled backups.
	IntervalSeconds int64 `json:"intervalSeconds,omitempty"`
	// Status is the last backup's: Scheduled, Running, Succeeded, Failed.
	Status string `json:"status,omitempty"`
	// LastSuccess is when the last successful backup read the dataset,
	// and Location where it is.
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	Location    string     `json:"location,omitempty"`
	// LastFailure is, when the last backup failed, when it started, and
	// FailureReason why it failed.
	LastFailure   *time.Time `json:"lastFailure,omitempty"`
	FailureReason string     `json:"failureReason,omitempty"`
	// LastStart is when the last backup started.
	LastStart *time.Time `json:"lastStart,omitempty"`
	// NextDue is when the schedule starts the next one.
	NextDue *time.Time `json:"nextDue,omitempty"`
	// LastRequest is the last backup request the operator handled;
	// PendingRequest one it has not handled yet.
	LastRequest    string `json:"lastRequest,omitempty"`
	PendingRequest string `json:"pendingRequest,omitempty"`
}

// Sample is what one node's INFO said, or why it did not answer.
type Sample struct {
	Info redisnode.Info
	Err  error
}

// BuildOverview makes the overview of o from the samples of its nodes'
// INFO, by pod name (a node missing from samples was not asked).
func BuildOverview(o *redisv1alpha1.RedisEnterpriseCluster, samples map[string]Sample, refresh time.Duration, now time.Time) Overview {
	ov := Overview{
		Cluster: o.Name, Namespace: o.Namespace, State: string(o.Status.State), Primary: o.Status.Primary,
		Conditions: []Condition{}, History: o.Status.PrimaryHistory, SwitchoverTargets: SwitchoverTargets(o),
		LastSwitchover: o.Status.LastSwitchover, Backup: backups(o, now),
		Endpoint: redisenterprisecluster.ServiceHost(o.Name, o.Namespace) + ":" + strconv.Itoa(redisenterprisecluster.Port),
		TLS:      o.Spec.TLS != nil, RefreshSeconds: refresh.Seconds(), Time: now,
	}
	if ov.History == nil {
		ov.History = []redisv1alpha1.PrimaryChange{}
	}
	ov.PendingSwitchover, _ = switchover.Pending(o.Annotations, o.Status.LastSwitchover)
	for _, c := range o.Status.Conditions {
		ov.Conditions = append(ov.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, "Ready"); c != nil {
		ov.Ready = &Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	primary, havePrimary := samples[o.Status.Primary]
	havePrimary = havePrimary && primary.Err == nil && primary.Info.Primary
	for _, name := range NodeNames(o) {
		n := Node{UID: UID(o.Name, name), Name: name, Addr: redisenterprisecluster.NodeHost(o.Name, name), Role: redisv1alpha1.RoleUnknown}
		for _, s := range o.Status.Nodes {
			if s.Name == name {
				n.Role, n.Healthy = s.Role, s.Healthy
			}
		}
		s, asked := samples[name]
		switch {
		case !asked:
		case s.Err != nil:
			n.Error = s.Err.Error()
		default:
			u := s.Info.Usage
			n.Answered, n.UsedMemory, n.MaxMemory, n.Clients, n.OpsPerSec = true, u.UsedMemory, u.MaxMemory, u.Clients, u.OpsPerSec
			if !s.Info.Primary {
				if havePrimary {
					lag := max(primary.Info.Offset-s.Info.Offset, 0)
					n.LagBytes = &lag
				}
				if s.Info.LastIO >= 0 {
					secs := s.Info.LastIO.Seconds()
					n.LagSeconds = &secs
				}
			}
		}
		ov.Nodes = append(ov.Nodes, n)
	}
	return ov
}

// backups is what the status says of o's backups at now.
func backups(o *redisv1alpha1.RedisEnterpriseCluster, now time.Time) Backups {
	var b Backups
	b.PendingRequest = pendingBackup(o)
	if o.Spec.Backup != nil {
		b.Configured = true
		b.IntervalSeconds = int64(o.Spec.Backup.Every().Seconds())
	}
	info := o.Status.BackupInfo
	if info == nil {
		return b
	}
	b.Status, b.Location, b.LastRequest = info.BackupStatus, info.LastBackup, info.LastRequest
	if info.LastBackupTime != nil {
		t := info.LastBackupTime.Time
		b.LastSuccess = &t
	}
	if info.LastScheduleTime != nil {
		t := info.LastScheduleTime.Time
		b.LastStart = &t
		if b.Configured {
			next := t.Add(o.Spec.Backup.Every())
			if next.Before(now) {
				next = now
			}
			b.NextDue = &next
		}
	}
	if info.BackupStatus == redisv1alpha1.BackupStatusFailed {
		b.LastFailure, b.FailureReason = b.LastStart, info.BackupFailureReason
	}
	return b
}

// pendingBackup is the backup request of o's annotation that the operator
// has not handled yet, "" when none.
func pendingBackup(o *redisv1alpha1.RedisEnterpriseCluster) string {
	v := strings.TrimSpace(o.Annotations[redisv1alpha1.BackupNowAnnotation])
	if v == "" || (o.Status.BackupInfo != nil && o.Status.BackupInfo.LastRequest == v) {
		return ""
	}
	return v
}

// NodeNames are the pods of o's nodes: those of spec.nodes, and any other
// the status lists (a node on its way out), by ordinal.
func NodeNames(o *redisv1alpha1.RedisEnterpriseCluster) []string {
	n := redisenterprisecluster.Nodes(&o.Spec)
	if o.Spec.Hibernate {
		n = 0
	}
	names := make([]string, 0, n)
	for i := range n {
		names = append(names, redisenterprisecluster.PodName(o.Name, i))
	}
	for _, s := range o.Status.Nodes {
		if UID(o.Name, s.Name) > n {
			names = append(names, s.Name)
		}
	}
	sortByUID(o.Name, names)
	return names
}

// UID is the node number of pod, a node of the cluster called name: its
// ordinal plus one; 0 for a name that is not one of its pods.
func UID(name, pod string) int {
	suffix, ok := strings.CutPrefix(pod, name+"-")
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(suffix)
	if err != nil || i < 0 || strconv.Itoa(i) != suffix {
		return 0
	}
	return i + 1
}

// sortByUID sorts the pods of the cluster called name by their number.
func sortByUID(name string, pods []string) {
	slices.SortStableFunc(pods, func(a, b string) int { return cmp.Compare(UID(name, a), UID(name, b)) })
}

// SwitchoverTargets are the nodes a switchover may move o's primary to:
// the healthy replicas of the status other than the primary (the
// operator counts a replica healthy when its link to the primary is up).
func SwitchoverTargets(o *redisv1alpha1.RedisEnterpriseCluster) []string {
	targets := []string{}
	for _, n := range o.Status.Nodes {
		if n.Name != o.Status.Primary && n.Role == redisv1alpha1.RoleReplica && n.Healthy {
			targets = append(targets, n.Name)
		}
	}
	sortByUID(o.Name, targets)
	return targets
}
