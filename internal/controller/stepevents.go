package controller

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// StepEvent is the event a pass emits for the step it took: what changed
// the membership of a cluster or the roles of its nodes, for `kubectl
// events` to tell. The step's Took is its note.
type StepEvent struct {
	// Type is Normal, or Warning for a step that follows a failure (a
	// failover, a member's data replaced).
	Type string
	// Reason is an UpperCamel word that names the change.
	Reason string
	// Action is the planner's step.
	Action string
}

// The reasons of the step events.
const (
	EventClusterSeeded     = "ClusterSeeded"
	EventLearnerAdded      = "LearnerAdded"
	EventMemberAdded       = "MemberAdded"
	EventLearnerPromoted   = "LearnerPromoted"
	EventMemberRemoved     = "MemberRemoved"
	EventLeaderMoved       = "LeaderMoved"
	EventVolumeReplaced    = "VolumeReplaced"
	EventPeerURLUpdated    = "PeerURLUpdated"
	EventPrimaryElected    = "PrimaryElected"
	EventFailedOver        = "FailedOver"
	EventPrimaryHandedOver = "PrimaryHandedOver"
	EventBackupStarted     = "BackupStarted"
	EventBackupSucceeded   = "BackupSucceeded"
	EventBackupFailed      = "BackupFailed"
	EventRestoreStarted    = "RestoreStarted"
	// EventRestored: a RedisEnterpriseCluster of spec.restore elected its
	// first primary, the node that restored the backup.
	EventRestored = "Restored"
)

// etcdStepEvent is the event of an EtcdCluster step of kind k; nil for a
// step that changes no membership (an upgrade, a pod restarted).
func etcdStepEvent(k etcdcluster.ActionKind) *StepEvent {
	reason, typ := "", corev1.EventTypeNormal
	switch k {
	case etcdcluster.Seed:
		reason = EventClusterSeeded
	case etcdcluster.AddLearner:
		reason = EventLearnerAdded
	case etcdcluster.AddMember:
		reason = EventMemberAdded
	case etcdcluster.Promote:
		reason = EventLearnerPromoted
	case etcdcluster.Remove:
		reason = EventMemberRemoved
	case etcdcluster.MoveLeader:
		reason = EventLeaderMoved
	case etcdcluster.ReplaceVolume:
		reason, typ = EventVolumeReplaced, corev1.EventTypeWarning
	case etcdcluster.SecurePeer:
		reason = EventPeerURLUpdated
	default:
		return nil
	}
	return &StepEvent{Type: typ, Reason: reason, Action: string(k)}
}

// redisStepEvent is the event of a RedisEnterpriseCluster step a; nil for
// a step that changes no node's role (a label, a pod restarted). restored
// says the cluster has spec.restore and no primary yet: its first primary
// is the node that restored the backup.
func redisStepEvent(a rec.Action, restored bool) *StepEvent {
	reason, typ := "", corev1.EventTypeNormal
	switch a {
	case rec.Promote:
		reason = EventPrimaryElected
		if restored {
			reason = EventRestored
		}
	case rec.Failover:
		reason, typ = EventFailedOver, corev1.EventTypeWarning
	case rec.Handover:
		reason = EventPrimaryHandedOver
	case rec.ReplaceVolume:
		reason, typ = EventVolumeReplaced, corev1.EventTypeWarning
	default:
		return nil
	}
	return &StepEvent{Type: typ, Reason: reason, Action: string(a)}
}
