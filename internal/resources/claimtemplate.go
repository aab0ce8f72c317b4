package resources

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TemplateClaimSize is the size the volume claim template called volume
// of the live StatefulSet sts asks for; nil without a StatefulSet or such
// a template. A StatefulSet's volumeClaimTemplates cannot change, so a
// builder keeps this size in the template once the StatefulSet exists,
// and a larger size reaches the claims by growing each one in place (see
// ClaimGrowth): a claim the StatefulSet makes later at the template's
// size is grown after it.
func TemplateClaimSize(sts *appsv1.StatefulSet, volume string) *resource.Quantity {
	if sts == nil {
		return nil
	}
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name != volume {
			continue
		}
		if q, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			return &q
		}
	}
	return nil
}
