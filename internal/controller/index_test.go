package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/testenv"
)

// The cache's List finds, through the index of children by controller,
// exactly the children of one resource within its namespace, as prune
// asks: not another owner's children, nor its own in another namespace.
// PodDisruptionBudgets, since only the types some kind prunes are indexed.
// The cache watches every namespace, as the operator does by default.
func TestChildrenAreFoundThroughTheirControllerIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := cache.New(testCluster.Config(), cache.Options{Scheme: controller.NewScheme(), ByObject: controller.CacheByObject()})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.IndexByController(c); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	// Three owners in one namespace, two children of each there, and a
	// child of the first in a second namespace.
	ns, other := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	labels := map[string]string{resources.LabelManagedBy: resources.ManagedBy, "app": "child"}
	child := func(namespace, name string, owner *corev1.ConfigMap) {
		d := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
		}
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	owners := make([]*corev1.ConfigMap, 0, 3)
	for i := range 3 {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("owner-%d", i)}}
		if err := k8s.Create(ctx, owner); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, owner)
		child(ns, fmt.Sprintf("child-%d-a", i), owner)
		child(ns, fmt.Sprintf("child-%d-b", i), owner)
	}
	child(other, "child-0-a", owners[0])

	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: other, Name: "child-0-a"}, &policyv1.PodDisruptionBudget{}); err != nil {
			return false, fmt.Sprintf("the cache has no %s/child-0-a yet: %v", other, err)
		}
		for i, owner := range owners {
			var list policyv1.PodDisruptionBudgetList
			if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{controller.ControllerUIDField: string(owner.UID)}); err != nil {
				return false, err.Error()
			}
			var names []string
			for _, d := range list.Items {
				names = append(names, d.Namespace+"/"+d.Name)
			}
			slices.Sort(names)
			want := []string{fmt.Sprintf("%s/child-%d-a", ns, i), fmt.Sprintf("%s/child-%d-b", ns, i)}
			if !slices.Equal(names, want) {
				return false, fmt.Sprintf("the index finds %v for %s, want %v", names, owner.Name, want)
			}
		}
		return true, ""
	})
}

// The operator's cache holds its children without the managedFields
// entries of their status (the Deployment controller's report, here the
// test's) and with the operator's own apply entry, which a pass reads, and
// its resources without any managedFields.
func TestCacheDropsTheManagedFieldsOfStatuses(t *testing.T) {
	ns, op := startOperator(t)
	app := &appv1.AppService{}
	testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
	// The sample's node port is the one test that asks for it.
	app.Spec.Ports[0].NodePort = nextNodePort()
	testenv.Create(t, k8s, app)
	dep, _ := children(ns, "nginx-app")
	waitForObject(t, dep)
	markAvailable(t, ns, dep.Name)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, "")

	hasStatusEntry := func(o client.Object) bool {
		return slices.ContainsFunc(o.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" })
	}
	for _, o := range []client.Object{dep, app} {
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			live, cached := o.DeepCopyObject().(client.Object), o.DeepCopyObject().(client.Object)
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
				return false, err.Error()
			}
			if err := op.Cache.Get(context.Background(), client.ObjectKeyFromObject(o), cached); err != nil {
				return false, err.Error()
			}
			if cached.GetResourceVersion() != live.GetResourceVersion() {
				return false, fmt.Sprintf("%T: cache at %s, API server at %s", o, cached.GetResourceVersion(), live.GetResourceVersion())
			}
			if o == client.Object(app) {
				return hasStatusEntry(live) && len(cached.GetManagedFields()) == 0,
					fmt.Sprintf("AppService: status entry on the API server %v; %d managedFields entries in the cache, want none", hasStatusEntry(live), len(cached.GetManagedFields()))
			}
			applied := slices.ContainsFunc(cached.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
				return e.Manager == engine.FieldOwner("appservice") && e.Operation == metav1.ManagedFieldsOperationApply
			})
			return hasStatusEntry(live) && !hasStatusEntry(cached) && applied,
				fmt.Sprintf("Deployment: status entry on the API server %v, in the cache %v; the operator's apply entry in the cache %v", hasStatusEntry(live), hasStatusEntry(cached), applied)
		})
	}
}
