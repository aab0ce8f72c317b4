package redis

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// imageNotices is the event that says o's nodes run the operator's
// open-source image in place of the Redis Enterprise image its spec
// names: once, while the status does not say so yet.
func imageNotices(o *redisv1alpha1.RedisEnterpriseCluster, openSource string) []engine.Notice {
	_, _, replaced := redisenterprisecluster.Image(&o.Spec, openSource)
	if replaced == "" {
		return nil
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, redisv1alpha1.ConditionImageReplaced); c != nil && c.Message == replaced {
		return nil
	}
	return []engine.Notice{{Type: corev1.EventTypeWarning, Reason: redisv1alpha1.ReasonProprietaryImage, Action: "ReplaceImage", Message: replaced}}
}
