package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/testenv"
)

// The index of children by controller holds one entry per child (its
// namespace and its controller's uid; not a second one for all
// namespaces), and the cache's List finds a resource's children through it
// within their namespace, as prune asks. The cache watches every
// namespace, as the operator does by default.
func TestChildrenAreIndexedOnceByTheirController(t *testing.T) {
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

	// One owner, and a child of it in each of two namespaces.
	ns, other := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := k8s.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ns, other} {
		labels := map[string]string{resources.LabelManagedBy: resources.ManagedBy, "app": "child"}
		d := plainDeployment(n, "child", labels, "nginx")
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		for _, n := range []string{ns, other} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: n, Name: "child"}, &appsv1.Deployment{}); err != nil {
				return false, fmt.Sprintf("the cache has no %s/child yet: %v", n, err)
			}
		}
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{controller.ControllerIndex: string(owner.UID)}); err != nil {
			return false, err.Error()
		}
		var found []string
		for _, d := range list.Items {
			found = append(found, d.Namespace+"/"+d.Name)
		}
		return slices.Equal(found, []string{ns + "/child"}), fmt.Sprintf("the index finds %v in %s, want only %s/child", found, ns, ns)
	})
	inf, err := c.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, v := range inf.(toolscache.SharedIndexInformer).GetIndexer().ListIndexFuncValues(controller.ControllerIndexName) {
		if strings.HasSuffix(v, "/"+string(owner.UID)) {
			values = append(values, v)
		}
	}
	slices.Sort(values)
	want := []string{ns + "/" + string(owner.UID), other + "/" + string(owner.UID)}
	slices.Sort(want)
	if !slices.Equal(values, want) {
		t.Errorf("index values for the owner: %v, want one per child: %v", values, want)
	}
}

// The operator's cache holds its children and its resources without the
// managedFields entries of their status (the Deployment controller's
// report, here the test's; the operator's own status writes), and with
// the operator's own apply entry on the children, which a pass reads.
func TestCacheDropsTheManagedFieldsOfStatuses(t *testing.T) {
	ns, op := startOperator(t)
	app := &appv1.AppService{}
	loadSample(t, "app_v1_appservice.yaml", app, ns)
	create(t, app)
	dep, _ := children(ns, "nginx-app")
	waitForObject(t, dep)
	markAvailable(t, ns, dep.Name)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, "")

	hasStatusEntry := func(o client.Object) bool {
		return slices.ContainsFunc(o.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" })
	}
	for _, o := range []client.Object{dep, app} {
		testenv.Eventually(t, 20*time.Second, func() (bool, string) {
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
			applied := o != client.Object(dep) || slices.ContainsFunc(cached.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
				return e.Manager == controller.FieldOwner("appservice") && e.Operation == metav1.ManagedFieldsOperationApply
			})
			return hasStatusEntry(live) && !hasStatusEntry(cached) && applied,
				fmt.Sprintf("%T: status entry on the API server %v, in the cache %v; the operator's apply entry in the cache (of the Deployment) %v", o, hasStatusEntry(live), hasStatusEntry(cached), applied)
		})
	}
}
