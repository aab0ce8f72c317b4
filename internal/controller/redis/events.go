package redis

import (
	corev1 "k8s.io/api/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/engine"
)

// redisStepEvent is the event of a RedisEnterpriseCluster step a; nil for
// a step that changes no node's role (a label, a pod restarted). restored
// says the cluster has spec.restore and no primary yet: its first primary
// is the node that restored the backup.
func redisStepEvent(a redisenterprisecluster.Action, restored bool) *engine.StepEvent {
	reason, typ := "", corev1.EventTypeNormal
	switch a {
	case redisenterprisecluster.Promote:
		reason = redisv1alpha1.EventPrimaryElected
		if restored {
			reason = redisv1alpha1.EventRestored
		}
	case redisenterprisecluster.Failover:
		reason, typ = redisv1alpha1.EventFailedOver, corev1.EventTypeWarning
	case redisenterprisecluster.Handover:
		reason = redisv1alpha1.EventPrimaryHandedOver
	case redisenterprisecluster.ReplaceVolume:
		reason, typ = conditions.EventVolumeReplaced, corev1.EventTypeWarning
	default:
		return nil
	}
	return &engine.StepEvent{Type: typ, Reason: reason, Action: string(a)}
}
