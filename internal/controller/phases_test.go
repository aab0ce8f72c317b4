package controller_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/testenv"
)

// A step-wise kind plugs its step into the engine: every pass takes at
// most one step against the application, the engine comes back on its own
// while a step is taken or awaited, the status says what the pass did, and
// once the application has reached the spec a pass takes no step and
// writes nothing. A step that fails, or an application that cannot take
// one, is reported and takes no step.
func TestStepwiseKindTakesOneStepPerPass(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	obj := &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "members"}, Spec: cachev1alpha1.MemcachedSpec{Size: 3}}
	testenv.Create(t, k8s, obj)
	app := &controller.FakeMembers{CatchUpIn: 2}
	r := controller.NewMembersReconciler(k8s, app)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	ready := func() *metav1.Condition {
		t.Helper()
		get(t, obj)
		return meta.FindStatusCondition(obj.Status.Conditions, conditions.Ready)
	}

	passes := 0
	for app.Voters() < 3 {
		if passes++; passes > 20 {
			t.Fatalf("3 members not reached in 20 passes: %d voters, %d changes", app.Voters(), app.Changes)
		}
		before := app.Changes
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("pass %d: %v", passes, err)
		}
		if app.Changes-before > 1 {
			t.Fatalf("pass %d made %d membership changes, want at most one", passes, app.Changes-before)
		}
		if app.Voters() < 3 && res.RequeueAfter <= 0 {
			t.Fatalf("pass %d: no requeue while the members are short (%+v)", passes, res)
		}
		if c := ready(); app.Voters() < 3 && (c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Scaling") {
			t.Fatalf("pass %d: Ready %+v while scaling", passes, c)
		}
	}
	// Three adds, three promotions, each learner waiting twice.
	if app.Changes != 6 {
		t.Errorf("%d membership changes to reach 3 members, want 6", app.Changes)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if c := ready(); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v once every member is in place", c)
	}
	rv := obj.ResourceVersion
	res, err := r.Reconcile(ctx, req)
	if get(t, obj); err != nil || obj.ResourceVersion != rv || app.Changes != 6 || res.RequeueAfter != 0 {
		t.Errorf("a pass at the spec: error %v, resourceVersion %s -> %s, %d changes, %+v; want no write, no step, no requeue", err, rv, obj.ResourceVersion, app.Changes, res)
	}

	// The application does not answer: reported, retried, no step.
	app.Fail = controller.ErrMembersUnreachable
	obj.Spec.Size = 1
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); !errors.Is(err, controller.ErrMembersUnreachable) {
		t.Errorf("a pass whose step failed returned %v, want the step's error for a retry", err)
	}
	if c := ready(); c == nil || c.Reason != conditions.ReasonStepFailed || app.Changes != 6 {
		t.Errorf("a failed step: Ready %+v, %d changes; want reason %s and no change", c, app.Changes, conditions.ReasonStepFailed)
	}

	// The application cannot take a step safely: said so, nothing done.
	app.Fail, app.NoQuorum = nil, true
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if c := ready(); c == nil || c.Reason != "QuorumLost" || app.Changes != 6 {
		t.Errorf("no quorum: Ready %+v, %d changes; want reason QuorumLost and no change", c, app.Changes)
	}

	// A spec the kind cannot build stops the pass before the step: the
	// failure is reported, the safety step still runs, and the pass comes
	// back when the step asks rather than waiting for a new spec.
	app.NoQuorum, app.InvalidSpec = false, true
	res, err = r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter <= 0 {
		t.Errorf("a pass with an invalid spec: %+v, %v; want no error and a requeue for the safety step", res, err)
	}
	if c := ready(); c == nil || c.Reason != conditions.ReasonInvalidSpec || app.SafetyPasses != 1 || app.Changes != 6 {
		t.Errorf("an invalid spec: Ready %+v, %d safety passes, %d changes; want reason %s, one safety pass and no change",
			c, app.SafetyPasses, app.Changes, conditions.ReasonInvalidSpec)
	}
	app.InvalidSpec = false

	// Back: scales in one member per pass.
	for passes = 0; app.Voters() > 1; passes++ {
		before := app.Changes
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if app.Changes-before != 1 {
			t.Fatalf("scale-in pass made %d changes, want one", app.Changes-before)
		}
	}
	if passes != 2 {
		t.Errorf("3 -> 1 took %d passes, want 2", passes)
	}
}

// A pass that cannot observe the application builds, applies and changes
// nothing, and its status says why; the error goes back for a retry.
func TestDataServiceThatCannotObserveSaysWhy(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	obj := &cachev1alpha1.Memcached{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "members"}, Spec: cachev1alpha1.MemcachedSpec{Size: 3}}
	testenv.Create(t, k8s, obj)
	app := &controller.FakeMembers{Unreadable: controller.ErrMembersUnreachable}
	r := controller.NewMembersReconciler(k8s, app)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if _, err := r.Reconcile(ctx, req); !errors.Is(err, controller.ErrMembersUnreachable) {
		t.Errorf("a pass that could not observe returned %v, want the error for a retry", err)
	}
	get(t, obj)
	c := meta.FindStatusCondition(obj.Status.Conditions, conditions.Ready)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != conditions.ReasonStepFailed || app.Changes != 0 || app.SafetyPasses != 0 {
		t.Errorf("Ready %+v, %d changes, %d safety passes; want False, reason %s, nothing done", c, app.Changes, app.SafetyPasses, conditions.ReasonStepFailed)
	}
	// Readable again: the pass goes on from there.
	app.Unreadable = nil
	if _, err := r.Reconcile(ctx, req); err != nil || app.Changes != 1 {
		t.Errorf("the next pass: %v, %d changes; want no error and one step", err, app.Changes)
	}
}
