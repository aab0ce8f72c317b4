package resources

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/app-operator/app-operator/api/placement"
)

// Place gives the pod spec the placement's node selector and tolerations,
// as they are given; neither is set when the placement has none.
func Place(pod *corev1ac.PodSpecApplyConfiguration, p placement.Placement) {
	if sel := p.PodNodeSelector(); len(sel) > 0 {
		pod.WithNodeSelector(sel)
	}
	for _, t := range p.PodTolerations() {
		pod.WithTolerations(Convert[corev1ac.TolerationApplyConfiguration](t))
	}
}

// DeploymentSpread is the topology spread constraint of a Deployment's
// pods, selected by selector: at most one more pod in a domain of the
// spread's key than in any other, as a preference (ScheduleAnyway) or,
// when required, as a rule (DoNotSchedule). Only the pods of one revision
// count against each other (matchLabelKeys pod-template-hash): the pods a
// rolling update adds are never held back by the old ones they replace.
func DeploymentSpread(s *placement.Spread, selector map[string]string) *corev1ac.TopologySpreadConstraintApplyConfiguration {
	when := corev1.ScheduleAnyway
	if s.IsRequired() {
		when = corev1.DoNotSchedule
	}
	return corev1ac.TopologySpreadConstraint().
		WithMaxSkew(1).
		WithTopologyKey(s.Key()).
		WithWhenUnsatisfiable(when).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
		WithMatchLabelKeys(appsv1.DefaultDeploymentUniqueLabelKey)
}

// SpreadMembers spreads the members of a StatefulSet, selected by
// selector, over the domains of the spread's key. As a preference, a
// topology spread constraint (maxSkew 1, ScheduleAnyway) places each
// member where the fewest others are, and never leaves one pending. When
// required, a pod anti-affinity keeps every member out of a domain that
// holds another: a member with no such domain left stays Pending.
func SpreadMembers(pod *corev1ac.PodSpecApplyConfiguration, s *placement.Spread, selector map[string]string) {
	if !s.IsRequired() {
		pod.WithTopologySpreadConstraints(corev1ac.TopologySpreadConstraint().
			WithMaxSkew(1).
			WithTopologyKey(s.Key()).
			WithWhenUnsatisfiable(corev1.ScheduleAnyway).
			WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))
		return
	}
	pod.WithAffinity(corev1ac.Affinity().
		WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
				WithTopologyKey(s.Key()).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(selector)))))
}
