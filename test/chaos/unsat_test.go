package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// reasonWithin bounds the wait for a spec the cluster cannot satisfy to be
// reported: generous, for a shared machine; the times seen are figures.
const reasonWithin = 2 * time.Minute

// TestUnsatisfiableSpecs gives the operator specs that pass admission but
// that the cluster cannot satisfy: a node port another Service holds, a
// Service over the namespace's quota, a child's name taken by an object the
// operator does not own. Each is reported as Ready=False with its own
// reason, and no child is deleted or replaced.
func TestUnsatisfiableSpecs(t *testing.T) {
	t.Parallel()
	scenario(t, famUnsat)
	m := startManaged(t)
	c, ns, p := m.c, m.ns, m.p
	crs := convergeSamples(t, c, ns, famUnsat)
	before := childUIDs(t, c, ns)
	ctx := context.Background()

	// waitReason waits for Ready=False with reason for the current
	// generation of obj, and returns how long after since that was seen.
	waitReason := func(obj client.Object, reason, mention string, since time.Time) time.Duration {
		t.Helper()
		seen := timeUntil(t, since, reasonWithin, func() (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return false, err.Error()
			}
			cond := readyCondition(obj)
			if cond == nil {
				return false, "no Ready condition"
			}
			og, _ := cond["observedGeneration"].(int64)
			ok := cond["status"] == "False" && cond["reason"] == reason && og == obj.GetGeneration()
			return ok, fmt.Sprintf("Ready=%v %v for generation %d of %d: %v", cond["status"], cond["reason"], og, obj.GetGeneration(), cond["message"])
		})
		testenv.CheckStatusInvariants(t, obj)
		if msg := fmt.Sprint(readyCondition(obj)["message"]); !strings.Contains(msg, mention) {
			t.Errorf("%s %s: the %s message does not mention %q: %s", kindOf(obj), obj.GetName(), reason, mention, msg)
		}
		return seen
	}

	// A node port another Service holds: the AppService asks for it.
	holderPort := nextNodePort()
	holder := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "port-holder"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "port-holder"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), NodePort: holderPort}},
		},
	}
	create(t, c, holder)
	app := crs[0].(*appv1.AppService)
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		t.Fatal(err)
	}
	app.Spec.Ports[0].NodePort = holderPort
	if err := c.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	portTook := waitReason(app, conditions.ReasonNodePortAllocated, "already allocated", time.Now())

	// A quota with room for no more Services: a new AppService's Service
	// is refused.
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "services"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse(fmt.Sprint(countServices(t, c, ns)))}},
	}
	create(t, c, quota)
	// The quota is full once its controller has counted every Service:
	// its count comes from an informer that may not have seen the
	// port holder yet, and a quota that counts one short admits one more.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_ = c.Get(ctx, client.ObjectKeyFromObject(quota), quota)
		used, counted := quota.Status.Used[corev1.ResourceServices]
		hard := quota.Spec.Hard[corev1.ResourceServices]
		return counted && used.Cmp(hard) >= 0, fmt.Sprintf("the quota counts %s of %s Services", used.String(), hard.String())
	})
	extra := manyResources(t, ns, 1)[0].(*appv1.AppService)
	extra.SetName("over-quota")
	create(t, c, extra)
	quotaTook := waitReason(extra, conditions.ReasonApplyRejected, "exceeded quota", time.Now())

	// A ConfigMap of the name a new MyWeb wants, that the operator does
	// not own.
	web := crs[len(crs)-1].DeepCopyObject().(*operatorv1.MyWeb)
	web.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "taken"}
	web.Spec.NodePortNumber = nextNodePort()
	var foreign *corev1.ConfigMap
	for _, ch := range desired(t, web) {
		if ch.kind == "ConfigMap" {
			foreign = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ch.name}, Data: map[string]string{"owner": "someone else"}}
		}
	}
	create(t, c, foreign)
	create(t, c, web)
	conflictTook := waitReason(web, conditions.ReasonChildConflict, "ConfigMap "+foreign.Name, time.Now())

	// Nothing deleted or replaced, the foreign objects untouched.
	gone := missingOrReplaced(before, childUIDs(t, c, ns))
	if len(gone) > 0 {
		t.Errorf("children deleted or replaced: %v", gone)
	}
	for _, o := range []client.Object{holder, foreign} {
		rv := o.GetResourceVersion()
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("%s %s: %v", kindOf(o), o.GetName(), err)
		}
		if o.GetResourceVersion() != rv || metav1.GetControllerOf(o) != nil {
			t.Errorf("%s %s, which the operator does not own, was changed", kindOf(o), o.GetName())
		}
	}
	for _, w := range p.Writes(work) {
		if w.method == "DELETE" {
			t.Errorf("the operator deleted something: %s", w)
		}
	}
	checkInvariants(t, c, ns)
	a := auditNamespace(t, c, ns)
	record(famUnsat, audit{lost: gone, duplicated: a.duplicated, orphaned: a.orphaned})
	if len(a.duplicated)+len(a.orphaned) > 0 {
		t.Errorf("children of %s: %s", ns, a)
	}
	timing("unsatisfiable spec: Ready=False NodePortAllocated after %.2fs, ApplyRejected (exceeded quota) after %.2fs, ChildConflict after %.2fs; 0 children deleted or replaced",
		portTook.Seconds(), quotaTook.Seconds(), conflictTook.Seconds())
}

func countServices(t testing.TB, c client.Client, ns string) int {
	t.Helper()
	var l corev1.ServiceList
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}
