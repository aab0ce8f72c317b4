package etcd

import (
	corev1 "k8s.io/api/core/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// etcdStepEvent is the event of an EtcdCluster step of kind k; nil for a
// step that changes no membership (an upgrade, a pod restarted).
func etcdStepEvent(k etcdcluster.ActionKind) *engine.StepEvent {
	reason, typ := "", corev1.EventTypeNormal
	switch k {
	case etcdcluster.Seed:
		reason = etcdv1beta2.EventClusterSeeded
	case etcdcluster.AddLearner:
		reason = etcdv1beta2.EventLearnerAdded
	case etcdcluster.Promote:
		reason = etcdv1beta2.EventLearnerPromoted
	case etcdcluster.Remove:
		reason = etcdv1beta2.EventMemberRemoved
	case etcdcluster.MoveLeader:
		reason = etcdv1beta2.EventLeaderMoved
	case etcdcluster.ReplaceVolume:
		reason, typ = conditions.EventVolumeReplaced, corev1.EventTypeWarning
	case etcdcluster.SecurePeer:
		reason = etcdv1beta2.EventPeerURLUpdated
	case etcdcluster.Compact:
		reason = etcdv1beta2.EventCompacted
	case etcdcluster.Defragment:
		reason = etcdv1beta2.EventDefragmented
	case etcdcluster.Disarm:
		reason = etcdv1beta2.EventAlarmDisarmed
	default:
		return nil
	}
	return &engine.StepEvent{Type: typ, Reason: reason, Action: string(k)}
}
