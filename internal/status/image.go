package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// RedisImageReplaced sets the ImageReplaced condition of a
// RedisEnterpriseCluster to say why its nodes do not run the image its
// spec names (replaced; see redisenterprisecluster.Image), or removes it
// when they do.
func RedisImageReplaced(conds *[]metav1.Condition, generation int64, replaced string, now metav1.Time) {
	if replaced == "" {
		meta.RemoveStatusCondition(conds, redisv1alpha1.ConditionImageReplaced)
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: redisv1alpha1.ConditionImageReplaced, Status: metav1.ConditionTrue,
		Reason: redisv1alpha1.ReasonProprietaryImage, Message: replaced, ObservedGeneration: generation, LastTransitionTime: now})
}
