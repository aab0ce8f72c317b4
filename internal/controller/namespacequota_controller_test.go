package controller_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/test/testenv"
)

// createMSDs creates n instances of the sample in ns as fast as the API
// server takes them.
func createMSDs(t *testing.T, ns string, n int) {
	t.Helper()
	cfg := rest.CopyConfig(testCluster.Config())
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	sample := newMSD(t, ns, "", nil)
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			m := sample.DeepCopy()
			m.Name = fmt.Sprintf("ms-%05d", i)
			m.Spec.FullName = m.Name
			return c.Create(ctx, m)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestNamespaceQuotaServesTenThousandInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 resources")
	}
	const n = 10000
	ns := testenv.NewNamespace(t, k8s)
	start := time.Now()
	createMSDs(t, ns, n)
	t.Logf("created %d MicroServiceDeploys in %s", n, time.Since(start).Round(time.Millisecond))

	r := controller.NewNamespaceQuotaReconciler(k8s, k8s)
	start = time.Now()
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: microservicedeploy.QuotaName}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("reconcile the quota of %d instances: %v", n, err)
	}
	t.Logf("one quota pass over %d instances took %s", n, time.Since(start).Round(time.Millisecond))
	quota := msdQuota(ns)
	get(t, quota)
	// Each sample instance: 14 pods of 2 cpu and 4Gi.
	for name, want := range map[corev1.ResourceName]string{"requests.cpu": fmt.Sprint(28 * n), "limits.memory": fmt.Sprintf("%dGi", 56*n)} {
		if got := quota.Spec.Hard[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s = %s, want %s", name, got.String(), want)
		}
	}
}

func TestMicroServiceDeployQuotaWritesWakeOnlyTheInstancesTheyConcern(t *testing.T) {
	const n = 40
	ns := testenv.NewNamespace(t, k8s)
	// No Deployment controller runs here: status writes that waited for
	// one would make 40 instances, created one by one, take minutes.
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{Settle: 10 * time.Millisecond}})
	before := reconcileCount(t, "microservicedeploy")
	// One at a time, as instances arrive in a live cluster: each one
	// changes the quota, and each quota write could wake every instance.
	for i := range n {
		m := newMSD(t, ns, fmt.Sprintf("ms-%02d", i), nil)
		testenv.Create(t, k8s, m)
		waitForCondition(t, m, conditions.QuotaReady, metav1.ConditionTrue, conditions.ReasonQuotaApplied)
	}
	time.Sleep(time.Second) // let queued passes finish
	passes := reconcileCount(t, "microservicedeploy") - before
	perInstance := passes / n
	t.Logf("%d instances converged in %.0f passes, %.1f per instance", n, passes, perInstance)
	// Each instance is woken by its creation, its children's creation and
	// at most once by the quota. Waking every instance on every quota
	// write makes the passes grow with the square of the instances: about
	// n/2 per instance.
	if perInstance > 6 {
		t.Errorf("%.1f passes per instance, want at most 6: quota writes fan out to every instance", perInstance)
	}
}

// blindCache is a client whose cache has not seen any ResourceQuota yet.
type blindCache struct{ client.Client }

func (c blindCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ResourceQuota); ok {
		return apierrors.NewNotFound(corev1.Resource("resourcequotas"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func TestNamespaceQuotaNeverOverwritesAQuotaItsCacheHasNotSeen(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, newMSD(t, ns, "", nil))
	// Someone else's quota of the operator's name, just created.
	foreign := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: microservicedeploy.QuotaName},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}},
	}
	testenv.Create(t, k8s, foreign)
	rv := foreign.ResourceVersion

	r := controller.NewNamespaceQuotaReconciler(blindCache{k8s}, k8s)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(foreign)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	get(t, foreign)
	if foreign.ResourceVersion != rv {
		t.Fatalf("the quota someone else created was changed: %+v", foreign.Spec)
	}
}

func TestQuotaWakesInstancesNotYetReportingOnItBehindNewWork(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	for _, name := range []string{"reported", "covered", "first-a", "first-b"} {
		testenv.Create(t, k8s, newMSD(t, ns, name, nil))
	}
	quotaReconciler := controller.NewNamespaceQuotaReconciler(k8s, k8s)
	key := client.ObjectKey{Namespace: ns, Name: microservicedeploy.QuotaName}
	if _, err := quotaReconciler.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatalf("quota pass: %v", err)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}
	get(t, quota)
	// "reported" said the quota did not count it yet, "covered" that it
	// does; the others have had no pass yet.
	for name, reason := range map[string]string{"reported": conditions.ReasonQuotaPending, "covered": conditions.ReasonQuotaApplied} {
		m := &customv1.MicroServiceDeploy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		get(t, m)
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: conditions.QuotaReady, Status: metav1.ConditionFalse, Reason: reason, Message: "-"})
		if err := k8s.Status().Update(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}

	q := priorityqueue.New[reconcile.Request]("quota-wakeups")
	defer q.ShutDown()
	controller.QuotaChanged(k8s).Create(context.Background(), event.CreateEvent{Object: quota}, q)
	got := map[string]int{}
	for q.Len() > 0 {
		req, priority, _ := q.GetWithPriority()
		got[req.Name] = priority
		q.Done(req)
	}
	want := map[string]int{"reported": 0, "first-a": handler.LowPriority, "first-b": handler.LowPriority}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("woken with priorities %v, want %v", got, want)
	}
}

// A spec that asks for less must not strand the pods of the old one: the
// quota keeps room for what its status says is in use, and shrinks back to
// the specs' once that use fits them.
func TestMicroServiceDeployQuotaKeepsRoomForThePodsInUse(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	createMSDs(t, ns, 1)
	r := controller.NewNamespaceQuotaReconciler(k8s, k8s)
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: microservicedeploy.QuotaName}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	quota := msdQuota(ns)
	get(t, quota)
	specs := quota.Spec.Hard["requests.cpu"]

	// What kube-controller-manager's quota controller would write with
	// the pods of an old, larger spec still counted.
	setUsed := func(cpu string) {
		t.Helper()
		get(t, quota)
		quota.Status.Hard = quota.Spec.Hard
		quota.Status.Used = corev1.ResourceList{"requests.cpu": resource.MustParse(cpu)}
		if err := k8s.Status().Update(ctx, quota); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		get(t, quota)
	}
	over := specs.DeepCopy()
	over.Add(resource.MustParse("6"))
	setUsed(over.String())
	want := specs.DeepCopy()
	want.Add(over)
	if got := quota.Spec.Hard["requests.cpu"]; got.Cmp(want) != 0 {
		t.Errorf("with %s in use, requests.cpu = %s, want %s (the specs' %s plus the use)", over.String(), got.String(), want.String(), specs.String())
	}
	setUsed("1m")
	if got := quota.Spec.Hard["requests.cpu"]; got.Cmp(specs) != 0 {
		t.Errorf("once the use fits, requests.cpu = %s, want the specs' %s", got.String(), specs.String())
	}
}
