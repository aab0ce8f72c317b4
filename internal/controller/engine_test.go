package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/testenv"
)

// laggingCache is a client whose reads of one AppService return a copy
// held back from an earlier moment, as a cache that has not yet seen the
// latest writes does; every other request goes to the API server.
type laggingCache struct {
	client.Client
	mu   sync.Mutex
	held *appv1.AppService
}

func (c *laggingCache) hold(app *appv1.AppService) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = app.DeepCopy()
}

func (c *laggingCache) release() { c.hold(nil) }

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	held := c.held
	c.mu.Unlock()
	if app, ok := obj.(*appv1.AppService); ok && held != nil && held.Name != "" && key == client.ObjectKeyFromObject(held) {
		held.DeepCopyInto(app)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// markObserved plays a Deployment controller that has observed the
// Deployment's spec and has no pod available: after its pods are gone, or
// before they come up. Like markAvailable, it waits for the replica count.
func markObserved(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if ok, why := getWritten(t, d); !ok {
			return false, why
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
		if err := k8s.Status().Update(context.Background(), d); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func readyOf(t *testing.T, app *appv1.AppService) *metav1.Condition {
	t.Helper()
	get(t, app)
	c := meta.FindStatusCondition(app.Status.Conditions, conditions.Ready)
	if c == nil {
		t.Fatalf("no Ready condition in %v", app.Status.Conditions)
	}
	return c
}

func TestStatusIsNotLeftWrongByACacheBehindTheLastStatusWrite(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	cache := &laggingCache{Client: k8s}
	r := controller.NewAppServiceReconciler(cache, k8s, nil)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}

	pass() // creates the children
	markObserved(t, ns, app.Name)
	pass() // the rollout has started
	if c := readyOf(t, app); c.Status != metav1.ConditionFalse {
		t.Fatalf("Ready = %s before the rollout, want False", c.Status)
	}
	early := app.DeepCopy()
	markAvailable(t, ns, app.Name)
	pass()
	if c := readyOf(t, app); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %s after the rollout, want True", c.Status)
	}

	// The Deployment goes back to the state of the second pass, and the
	// next pass reads the AppService from a cache that has not seen the
	// Ready=True write: its status equals the one this pass computes.
	markObserved(t, ns, app.Name)
	cache.hold(early)
	pass()
	if c := readyOf(t, app); c.Status != metav1.ConditionFalse || c.Reason != conditions.ReasonRolloutInProgress {
		t.Fatalf("Ready = %s (%s: %s) after the Deployment lost its pods, want False (%s)", c.Status, c.Reason, c.Message, conditions.ReasonRolloutInProgress)
	}
}

// A status write is remembered (so that a pass never computes against a
// cache that has not shown it) only until the informer shows the version
// it returned or a later one: the write's own event wakes no pass, and
// each resource would otherwise keep its entry until its spec changed.
func TestStatusWriteIsForgottenOnceTheInformerShowsIt(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	r, shown, pending := controller.StatusWrites(k8s)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	get(t, app)
	before := app.DeepCopy()
	markAvailable(t, ns, app.Name)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if c := readyOf(t, app); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %s (%s), want True", c.Status, c.Reason)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d status writes remembered after the Ready write, want 1", n)
	}
	shown(before)
	if n := pending(); n != 1 {
		t.Fatalf("%d status writes remembered after an event from before the write, want 1", n)
	}
	shown(app) // as written, or later
	if n := pending(); n != 0 {
		t.Fatalf("%d status writes remembered after the informer showed the write, want 0", n)
	}
}

func TestStatusWriteFromAStaleReadIsRefusedAndRetried(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	// A first reconciler (a previous leader, say) brings it to Ready.
	if _, err := controller.NewAppServiceReconciler(k8s, k8s, nil).Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	get(t, app)
	stale := app.DeepCopy()
	markAvailable(t, ns, app.Name)
	if _, err := controller.NewAppServiceReconciler(k8s, k8s, nil).Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}

	// Another reads the AppService as it was before that write.
	cache := &laggingCache{Client: k8s}
	cache.hold(stale)
	r := controller.NewAppServiceReconciler(cache, k8s, nil)
	_, err := r.Reconcile(context.Background(), req)
	if !apierrors.IsConflict(err) {
		t.Fatalf("status write from a stale read: error %v, want a conflict", err)
	}
	if errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("the conflict is terminal, want it retried: %v", err)
	}
	cache.release()
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("retry with a current read: %v", err)
	}
	if c := readyOf(t, app); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %s (%s), want True", c.Status, c.Reason)
	}
}

func TestStatusWriteIsRetriedAfterATerminalFailure(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	get(t, app)
	stale := app.DeepCopy()
	// The resource changes after the read the pass works from...
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Annotations = map[string]string{"touched": "yes"} })

	// ...and the pass fails for good (a spec no builder can turn into
	// children): its status write conflicts and must be retried.
	cache := &laggingCache{Client: k8s}
	cache.hold(stale)
	r := controller.NewAppServiceReconciler(cache, k8s, reconcile.TerminalError(errors.New("spec cannot be built")))
	_, err := r.Reconcile(context.Background(), req)
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("error = %v, want a retried (non-terminal) status write error", err)
	}
	cache.release()
	_, err = r.Reconcile(context.Background(), req)
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("error = %v, want the terminal build error once the status is written", err)
	}
	if c := readyOf(t, app); c.Reason != conditions.ReasonInvalidSpec {
		t.Fatalf("Ready reason = %s, want %s", c.Reason, conditions.ReasonInvalidSpec)
	}
}

// denyDeploymentsOf installs a ValidatingAdmissionPolicy that refuses every
// Deployment of the AppService called instance, and waits until the API
// server enforces it. It returns a function that removes it.
func denyDeploymentsOf(t *testing.T, ns, instance string) func() {
	t.Helper()
	ctx := context.Background()
	remove := testenv.DenyByPolicy(t, k8s, "deny-"+ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}, fmt.Sprintf("object.metadata.namespace != %q || object.metadata.name != %q", ns, instance), "deployments of this instance are not allowed by policy")
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: instance},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"probe": "x"}},
		},
	}
	probe.Spec.Template.Labels = map[string]string{"probe": "x"}
	probe.Spec.Template.Spec.Containers = []corev1.Container{{Name: "probe", Image: "probe"}}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil, fmt.Sprintf("policy not enforced yet (dry-run error %v)", err)
	})
	return remove
}

func TestAdmissionDenialIsReportedAndRecheckedNotTerminal(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	allow := denyDeploymentsOf(t, ns, app.Name)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{Recheck: 2 * time.Second}})
	testenv.Create(t, k8s, app)
	deleteAfterTest(t, app)

	c := waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonApplyRejected)
	if want := "deployments of this instance are not allowed by policy"; !strings.Contains(c.Message, want) {
		t.Errorf("Ready message %q does not carry the policy's %q", c.Message, want)
	}
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonApplyRejected)

	// Nothing tells the operator the policy is gone: the recheck finds out.
	allow()
	dep, _ := children(ns, app.Name)
	waitForObject(t, dep)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
}

// appServiceWithChildren starts an operator, creates an AppService in its
// namespace and waits for the AppService's Deployment and Service.
func appServiceWithChildren(t *testing.T) (*appv1.AppService, *appsv1.Deployment, *corev1.Service) {
	t.Helper()
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, app.Name)
	deleteAfterTest(t, app, dep, svc)
	waitForObject(t, dep)
	waitForObject(t, svc)
	return app, dep, svc
}

func TestOrphanedChildrenAreAdopted(t *testing.T) {
	app, dep, svc := appServiceWithChildren(t)

	// What `kubectl delete --cascade=orphan` leaves: the children keep
	// their labels and lose their owner reference.
	for _, o := range []client.Object{dep, svc} {
		patch := []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`)
		if err := k8s.Patch(context.Background(), o, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatalf("orphan %T: %v", o, err)
		}
	}
	for _, o := range []client.Object{dep, svc} {
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				return false, err.Error()
			}
			return metav1.IsControlledBy(o, app), fmt.Sprintf("%T owner references %v", o, o.GetOwnerReferences())
		})
	}
	// No Deployment controller runs here: adopted, the children leave
	// the AppService waiting for it, not in conflict.
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
}

// A pass that began from a cached copy read before the resource was
// deleted with --cascade=orphan must not give the orphaned children their
// owner reference back: the garbage collector would delete them, and a
// StatefulSet's pods with them, once the resource is gone.
func TestOrphanedChildrenOfAResourceBeingDeletedAreNotAdoptedFromAStaleRead(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	// Held by a finalizer, as the garbage collector holds it while it
	// orphans the children.
	app.Finalizers = []string{"test.app-operator.io/hold"}
	testenv.Create(t, k8s, app)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	if _, err := controller.NewAppServiceReconciler(k8s, k8s, nil).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	get(t, app)
	stale := app.DeepCopy()
	dep, svc := children(ns, app.Name)
	t.Cleanup(func() {
		_ = k8s.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})

	if err := k8s.Delete(ctx, app, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{dep, svc} {
		patch := []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`)
		if err := k8s.Patch(ctx, o, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatalf("orphan %T: %v", o, err)
		}
	}

	cache := &laggingCache{Client: k8s}
	cache.hold(stale)
	if _, err := controller.NewAppServiceReconciler(cache, k8s, nil).Reconcile(ctx, req); err != nil {
		t.Fatalf("a pass over a resource being deleted: %v", err)
	}
	for _, o := range []client.Object{dep, svc} {
		get(t, o)
		if refs := o.GetOwnerReferences(); len(refs) != 0 {
			t.Errorf("%T owner references %v after a pass read the resource before its deletion, want none", o, refs)
		}
	}
}

func TestChildrenStrippedOfOwnerAndLabelsAreAdopted(t *testing.T) {
	app, dep, svc := appServiceWithChildren(t)

	// Nothing ties them to the AppService any more but the fields its
	// controller applied, which the server records.
	for _, o := range []client.Object{dep, svc} {
		patch := []byte(`{"metadata":{"ownerReferences":null,"labels":null}}`)
		if err := k8s.Patch(context.Background(), o, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("strip %T: %v", o, err)
		}
	}
	for _, o := range []client.Object{dep, svc} {
		testenv.Eventually(t, settleWithin, func() (bool, string) {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				return false, err.Error()
			}
			return metav1.IsControlledBy(o, app) && o.GetLabels()[resources.LabelManagedBy] == resources.ManagedBy,
				fmt.Sprintf("%T owner references %v, labels %v", o, o.GetOwnerReferences(), o.GetLabels())
		})
	}
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
}

func TestMicroServiceDeployServiceAccountStrippedOfOwnerAndLabelsIsAdopted(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	m := newMSD(t, ns, "", nil)
	testenv.Create(t, k8s, m)
	deleteAfterTest(t, m)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m.Name}}
	waitForObject(t, sa)

	// The ServiceAccount holds nothing but metadata: what is left of it
	// must still tell that the operator applied it.
	patch := []byte(`{"metadata":{"ownerReferences":null,"labels":null}}`)
	if err := k8s.Patch(context.Background(), sa, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, sa)
		return metav1.IsControlledBy(sa, m) && sa.Labels[resources.LabelManagedBy] == resources.ManagedBy,
			fmt.Sprintf("owner references %v, labels %v (conditions: %+v)", sa.OwnerReferences, sa.Labels, m.Status.Conditions)
	})
}

func TestLostHandoverIsAppliedOnTheNextPass(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	m := newMSD(t, ns, "", nil) // autoscaling: the HPA owns replicas
	testenv.Create(t, k8s, m)
	deleteAfterTest(t, m)
	get(t, m)

	// The state a failed first handover leaves: the Deployment exists as
	// the kind applies it, without spec.replicas, so the API server
	// defaulted it to 1 and no field manager owns it.
	acs, err := controller.Build(m, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ac := range acs {
		if d, ok := ac.(interface{ GetKind() *string }); ok && ptr.Deref(d.GetKind(), "") == "Deployment" {
			if err := k8s.Apply(context.Background(), ac, client.FieldOwner(engine.FieldOwner("microservicedeploy")), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
		}
	}
	d := msdDeployment(ns, m.Name)
	get(t, d)
	if got := ptr.Deref(d.Spec.Replicas, -1); got != 1 {
		t.Fatalf("replicas before the operator runs = %d, want the default 1", got)
	}

	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	want := *m.Spec.Replicas
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, d)
		got := ptr.Deref(d.Spec.Replicas, -1)
		return got == want, fmt.Sprintf("replicas = %d, want the HPA's minimum %d (owners %v)", got, want, testenv.ReplicasOwners(t, d))
	})
	if owners := testenv.ReplicasOwners(t, d); len(owners) != 1 || owners[0] != engine.FieldOwner("microservicedeploy")+"-handover" {
		t.Errorf("spec.replicas owned by %v, want only the handover manager", owners)
	}
}

func TestChildrenUnchangedSinceAPassAreNotComparedAgain(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	r, compares := controller.NewAppServiceReconcilerCountingCompares(k8s, k8s)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(app)}
	dep, svc := children(ns, app.Name)
	// pass runs one pass and returns how many children it compared field
	// by field, and whether it wrote the Deployment or the Service.
	pass := func() (int64, bool) {
		t.Helper()
		before := compares()
		versions := func() string {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
				return err.Error()
			}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), svc); err != nil {
				return err.Error()
			}
			return dep.ResourceVersion + "/" + svc.ResourceVersion
		}
		was := versions()
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		return compares() - before, versions() != was
	}

	pass() // creates the children
	if n, wrote := pass(); n != 0 || wrote {
		t.Errorf("the pass after the one that created the children compared %d of them (wrote: %v), want 0: the server's answer to the apply holds what was applied", n, wrote)
	}

	// Someone scales the Deployment: it is compared, and repaired.
	testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](7) })
	if n, wrote := pass(); n != 1 || !wrote {
		t.Errorf("after the Deployment was scaled, the pass compared %d children (wrote: %v), want 1, written", n, wrote)
	}
	if *dep.Spec.Replicas != *app.Spec.Size {
		t.Errorf("replicas = %d after the pass, want %d", *dep.Spec.Replicas, *app.Spec.Size)
	}
	if n, wrote := pass(); n != 0 || wrote {
		t.Errorf("the pass after the repair compared %d children (wrote: %v), want 0", n, wrote)
	}

	// Someone removes a label the operator set on the Service.
	testenv.Update(t, k8s, svc, func(s *corev1.Service) { delete(s.Labels, resources.LabelInstance) })
	if n, wrote := pass(); n != 1 || !wrote {
		t.Errorf("after a label was removed from the Service, the pass compared %d children (wrote: %v), want 1, written", n, wrote)
	}
	if svc.Labels[resources.LabelInstance] != app.Name {
		t.Errorf("Service labels = %v after the pass, want %s=%s back", svc.Labels, resources.LabelInstance, app.Name)
	}

	// A change to the AppService changes what is wanted of the Deployment
	// alone.
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Spec.Size = ptr.To(*a.Spec.Size + 1) })
	if n, wrote := pass(); n != 1 || !wrote {
		t.Errorf("after the size changed, the pass compared %d children (wrote: %v), want 1, written", n, wrote)
	}
	if *dep.Spec.Replicas != *app.Spec.Size {
		t.Errorf("replicas = %d after the size changed, want %d", *dep.Spec.Replicas, *app.Spec.Size)
	}
}
