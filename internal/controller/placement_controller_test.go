package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/test/testenv"
)

// pinned is a placement as a user pins pods with.
var pinned = placement.Placement{
	NodeSelector: map[string]placement.LabelValue{"disktype": "ssd"},
	Tolerations: []placement.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "apps", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
	},
	Spread: &placement.Spread{TopologyKey: corev1.LabelTopologyZone, Required: true},
}

// placedAsPinned reports how the pod template differs from the pinned
// placement: its node selector, its tolerations and its spread (a
// Deployment's spread constraint or a StatefulSet's anti-affinity).
func placedAsPinned(pod corev1.PodSpec, statefulSet bool) string {
	var diff string
	if !equality.Semantic.DeepEqual(pod.NodeSelector, pinned.PodNodeSelector()) {
		diff += fmt.Sprintf("node selector %v; ", pod.NodeSelector)
	}
	if d := cmp.Diff(pinned.PodTolerations(), pod.Tolerations); d != "" {
		diff += "tolerations " + d + "; "
	}
	if statefulSet {
		a := pod.Affinity
		if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != corev1.LabelTopologyZone {
			diff += fmt.Sprintf("affinity %+v; ", a)
		}
	} else if c := pod.TopologySpreadConstraints; len(c) != 1 || c[0].TopologyKey != corev1.LabelTopologyZone || c[0].WhenUnsatisfiable != corev1.DoNotSchedule {
		diff += fmt.Sprintf("spread %+v", c)
	}
	return diff
}

// TestAppServicePlacementIsAppliedKeptAndRepaired checks that a pinned
// placement reaches the Deployment, that a steady pass compares it as
// applied (no write), and that a Deployment changed by hand gets it back.
func TestAppServicePlacementIsAppliedKeptAndRepaired(t *testing.T) {
	ns, op := startOperator(t)
	app := newAppService(t, ns)
	app.Spec.Placement = *pinned.DeepCopy()
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, "nginx-app")
	waitForObject(t, dep)
	if d := placedAsPinned(dep.Spec.Template.Spec, false); d != "" {
		t.Fatalf("Deployment not placed as pinned: %s", d)
	}
	markAvailable(t, ns, "nginx-app")
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	expectNoMutations(t, op, ns, "appservice", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) {
			s.Annotations = map[string]string{"example.com/touched": time.Now().String()}
		})
	})

	testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) {
		p := &d.Spec.Template.Spec
		p.NodeSelector = map[string]string{"disktype": "hdd"}
		p.Tolerations = p.Tolerations[:1]
		// The constraints are a list keyed by topologyKey and
		// whenUnsatisfiable: one changed by hand under another key would
		// be a constraint of its own, which the operator leaves as it
		// leaves every field it does not own. One removed comes back.
		p.TopologySpreadConstraints = nil
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		d := placedAsPinned(dep.Spec.Template.Spec, false)
		return d == "", "placement drift not repaired: " + d
	})

	// Back to the default: the operator's own constraint is replaced, not
	// kept beside the new one.
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Spec.Spread = nil })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		c := dep.Spec.Template.Spec.TopologySpreadConstraints
		return len(c) == 1 && c[0].TopologyKey == corev1.LabelHostname && c[0].WhenUnsatisfiable == corev1.ScheduleAnyway,
			fmt.Sprintf("spread constraints %+v, want the default alone", c)
	})
}

// TestRedisEnterpriseClusterPlacementIsAppliedAndRepaired checks the same
// of a StatefulSet: the pinned placement reaches it, with a required
// anti-affinity, and comes back after a change by hand.
func TestRedisEnterpriseClusterPlacementIsAppliedAndRepaired(t *testing.T) {
	ns, _ := startOperator(t)
	u := testenv.RedisSampleObject(t, ns)
	p, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pinned.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	spec := u.Object["spec"].(map[string]any)
	for k, v := range p {
		spec[k] = v
	}
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis-enterprise"}}
	waitForObject(t, sts)
	if d := placedAsPinned(sts.Spec.Template.Spec, true); d != "" {
		t.Fatalf("StatefulSet not placed as pinned: %s", d)
	}

	testenv.Update(t, k8s, sts, func(s *appsv1.StatefulSet) {
		p := &s.Spec.Template.Spec
		p.NodeSelector = nil
		p.Tolerations = nil
		p.Affinity = nil
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, sts)
		d := placedAsPinned(sts.Spec.Template.Spec, true)
		return d == "", "placement drift not repaired: " + d
	})
}
