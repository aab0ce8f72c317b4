package controller_test

import (
	"context"
	"fmt"
	"maps"
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
// namespace and its controller's bucket, the uid's first character; not a
// second entry for all namespaces), at most sixteen values per namespace
// (one per controller would cost a set per child), and the cache's List
// finds a resource's children through it within their namespace, as
// prune asks, among the other children of the bucket. The cache watches
// every namespace, as the operator does by default.
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

	// Twenty owners in one namespace, a child of each there, and a child
	// of the first in a second namespace.
	const owners = 20
	ns, other := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	labels := map[string]string{resources.LabelManagedBy: resources.ManagedBy, "app": "child"}
	child := func(namespace, name string, owner *corev1.ConfigMap) {
		d := plainDeployment(namespace, name, labels, "nginx")
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		if err := k8s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var cms []*corev1.ConfigMap
	buckets := map[string]bool{}
	for i := range owners {
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("owner-%02d", i)}}
		if err := k8s.Create(ctx, owner); err != nil {
			t.Fatal(err)
		}
		cms = append(cms, owner)
		buckets[ns+"/"+controller.ControllerBucket(owner.UID)] = true
		child(ns, fmt.Sprintf("child-%02d", i), owner)
	}
	child(other, "child-00", cms[0])

	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: other, Name: "child-00"}, &appsv1.Deployment{}); err != nil {
			return false, fmt.Sprintf("the cache has no %s/child-00 yet: %v", other, err)
		}
		// Each owner's child is found through the index in its own
		// namespace, with only children of the same bucket beside it.
		for i, owner := range cms {
			var list appsv1.DeploymentList
			if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{controller.ControllerIndex: controller.ControllerBucket(owner.UID)}); err != nil {
				return false, err.Error()
			}
			found := false
			for _, d := range list.Items {
				ref := metav1.GetControllerOf(&d)
				if d.Namespace != ns || ref == nil || controller.ControllerBucket(ref.UID) != controller.ControllerBucket(owner.UID) {
					return false, fmt.Sprintf("the index finds %s/%s for %s, of another bucket or namespace", d.Namespace, d.Name, owner.Name)
				}
				found = found || (ref.UID == owner.UID && d.Name == fmt.Sprintf("child-%02d", i))
			}
			if !found {
				return false, fmt.Sprintf("the index does not find the child of %s", owner.Name)
			}
		}
		return true, ""
	})
	inf, err := c.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	var values, otherValues []string
	for _, v := range inf.(toolscache.SharedIndexInformer).GetIndexer().ListIndexFuncValues(controller.ControllerIndexName) {
		switch {
		case strings.HasPrefix(v, ns+"/"):
			values = append(values, v)
		case strings.HasPrefix(v, other+"/"):
			otherValues = append(otherValues, v)
		}
	}
	slices.Sort(values)
	want := slices.Sorted(maps.Keys(buckets))
	if !slices.Equal(values, want) || len(values) > 16 {
		t.Errorf("index values in %s for %d children: %v, want one per bucket (at most 16): %v", ns, owners, values, want)
	}
	if want := []string{other + "/" + controller.ControllerBucket(cms[0].UID)}; !slices.Equal(otherValues, want) {
		t.Errorf("index values in %s: %v, want %v", other, otherValues, want)
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
