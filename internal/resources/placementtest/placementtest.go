// Package placementtest holds the cases every kind's builder is tested
// with for its placement (node selector, tolerations, spread), and what
// each case must give in the pod template.
package placementtest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	"github.com/app-operator/app-operator/api/placement"
)

// Case is a placement and what it asks of the pods.
type Case struct {
	Name      string
	Placement placement.Placement
	// The pod template's node selector and tolerations.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// The spread: over the domains of Key, as a rule when Required.
	Key      string
	Required bool
}

// Cases are the placements every builder is tested with.
func Cases() []Case {
	return []Case{
		{Name: "default: spread over the nodes as a preference", Key: corev1.LabelHostname},
		{Name: "an empty spread is the default", Placement: placement.Placement{Spread: &placement.Spread{}}, Key: corev1.LabelHostname},
		{Name: "required spread over the nodes",
			Placement: placement.Placement{Spread: &placement.Spread{Required: true}},
			Key:       corev1.LabelHostname, Required: true},
		{Name: "spread over zones as a preference",
			Placement: placement.Placement{Spread: &placement.Spread{TopologyKey: corev1.LabelTopologyZone}},
			Key:       corev1.LabelTopologyZone},
		{Name: "required spread over zones",
			Placement: placement.Placement{Spread: &placement.Spread{TopologyKey: corev1.LabelTopologyZone, Required: true}},
			Key:       corev1.LabelTopologyZone, Required: true},
		{Name: "node selector",
			Placement:    placement.Placement{NodeSelector: map[string]placement.LabelValue{"disktype": "ssd", "example.com/pool": "db"}},
			NodeSelector: map[string]string{"disktype": "ssd", "example.com/pool": "db"},
			Key:          corev1.LabelHostname},
		{Name: "tolerations",
			Placement: placement.Placement{Tolerations: []placement.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				{Operator: corev1.TolerationOpExists},
			}},
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				{Operator: corev1.TolerationOpExists},
			},
			Key: corev1.LabelHostname},
	}
}

// Style is how a kind spreads its pods.
type Style int

const (
	// Deployment: a topology spread constraint, ScheduleAnyway or, when
	// required, DoNotSchedule, counting the pods of one revision
	// (matchLabelKeys pod-template-hash).
	Deployment Style = iota
	// DeploymentRevisionKeyWhenRequired: as Deployment, with
	// matchLabelKeys only when required (Memcached, whose preferred
	// constraint keeps the form it had before spec.spread).
	DeploymentRevisionKeyWhenRequired
	// StatefulSet: a topology spread constraint with ScheduleAnyway as a
	// preference, a required pod anti-affinity as a rule.
	StatefulSet
)

// PodSpec returns the pod spec an apply configuration gives.
func PodSpec(t *testing.T, ac *corev1ac.PodSpecApplyConfiguration) corev1.PodSpec {
	t.Helper()
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	var spec corev1.PodSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// Check fails t unless the pod spec got places its pods, selected by
// selector, as c asks, in the style of the kind.
func Check(t *testing.T, got corev1.PodSpec, selector map[string]string, c Case, style Style) {
	t.Helper()
	if diff := cmp.Diff(c.NodeSelector, got.NodeSelector); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c.Tolerations, got.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	var constraints []corev1.TopologySpreadConstraint
	var affinity *corev1.Affinity
	sel := &metav1.LabelSelector{MatchLabels: selector}
	switch {
	case style == StatefulSet && c.Required:
		affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: sel, TopologyKey: c.Key}},
		}}
	default:
		tsc := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: c.Key, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel}
		if c.Required {
			tsc.WhenUnsatisfiable = corev1.DoNotSchedule
		}
		if style == Deployment || (style == DeploymentRevisionKeyWhenRequired && c.Required) {
			tsc.MatchLabelKeys = []string{"pod-template-hash"}
		}
		constraints = []corev1.TopologySpreadConstraint{tsc}
	}
	if diff := cmp.Diff(constraints, got.TopologySpreadConstraints); diff != "" {
		t.Errorf("topology spread constraints (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(affinity, got.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
}
