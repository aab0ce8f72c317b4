package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/status"
)

// FakeMembers is the application a step-wise test kind drives: a
// membership that grows by adding a learner, which catches up over a few
// looks and is then promoted, the way an etcd cluster grows. Every call is
// counted, and it can be made to fail or to lose its quorum.
type FakeMembers struct {
	mu        sync.Mutex
	voters    int
	learner   bool
	catchUp   int // looks left before the learner has caught up
	Changes   int // membership changes made
	Fail      error
	NoQuorum  bool
	CatchUpIn int // looks a new learner needs to catch up
	// InvalidSpec makes the kind's build fail, as a spec it cannot turn
	// into children does.
	InvalidSpec bool
	// SafetyPasses counts the steps run with safetySteps.
	SafetyPasses int
}

func (a *FakeMembers) look() (voters int, learner, caughtUp bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Fail != nil {
		return 0, false, false, a.Fail
	}
	if a.learner && a.catchUp > 0 {
		a.catchUp--
	}
	return a.voters, a.learner, a.learner && a.catchUp == 0, nil
}

func (a *FakeMembers) change(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
	a.Changes++
}

// Voters returns the number of voting members.
func (a *FakeMembers) Voters() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.voters
}

// nextMemberStep is the pure planner of the test kind: from what it saw
// of the members and the size wanted, the one next step, or why it waits.
func nextMemberStep(voters int, learner, caughtUp, quorum bool, size int) (action string, s Step) {
	switch {
	case !quorum:
		return "", Step{Failure: &status.Failure{Reason: "QuorumLost", Message: "a majority of the members is down"}}
	case learner && !caughtUp:
		return "", Step{Waiting: "the new member is catching up", RequeueAfter: 10 * time.Millisecond}
	case learner:
		return "promote", Step{Took: "promoted the new member", RequeueAfter: 10 * time.Millisecond}
	case voters < size:
		return "add", Step{Took: fmt.Sprintf("added member %d as a learner", voters+1), RequeueAfter: 10 * time.Millisecond}
	case voters > size:
		return "remove", Step{Took: fmt.Sprintf("removed member %d", voters), RequeueAfter: 10 * time.Millisecond}
	}
	return "", Step{}
}

// membersKind is a step-wise test kind on the Memcached API: no children,
// its spec.size members reached one guarded step at a time through app.
func membersKind(app *FakeMembers) kind[*cachev1alpha1.Memcached] {
	return kind[*cachev1alpha1.Memcached]{
		name:      "members-test",
		gvk:       cachev1alpha1.GroupVersion.WithKind("Memcached"),
		newObject: func() *cachev1alpha1.Memcached { return &cachev1alpha1.Memcached{} },
		build: func(*cachev1alpha1.Memcached, observed) ([]runtime.ApplyConfiguration, error) {
			if app.InvalidSpec {
				return nil, errors.New("spec.size: not a size this kind can build")
			}
			return nil, nil
		},
		step: func(ctx context.Context, _ clients, o *cachev1alpha1.Memcached, _ observed, scope stepScope) (Step, error) {
			if err := ctx.Err(); err != nil {
				return Step{}, err
			}
			if scope == safetySteps {
				// Looks, and would fence or fail over; never scales.
				app.change(func() { app.SafetyPasses++; app.Changes-- })
				return Step{Waiting: "only the safety steps while a child cannot be applied", RequeueAfter: 10 * time.Millisecond}, nil
			}
			voters, learner, caughtUp, err := app.look()
			if err != nil {
				return Step{}, fmt.Errorf("list members: %w", err)
			}
			action, s := nextMemberStep(voters, learner, caughtUp, !app.NoQuorum, int(o.Spec.Size))
			switch action {
			case "add":
				app.change(func() { app.learner, app.catchUp = true, app.CatchUpIn })
			case "promote":
				app.change(func() { app.learner, app.voters = false, app.voters+1 })
			case "remove":
				app.change(func() { app.voters-- })
			}
			return s, nil
		},
		setStatus: func(o *cachev1alpha1.Memcached, pass report, now metav1.Time) {
			ready := metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: conditions.ReasonAvailable, Message: "Every member is in place", ObservedGeneration: o.Generation}
			switch {
			case pass.failure != nil:
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, pass.failure.Reason, pass.failure.Message
			case pass.step.Took != "":
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Scaling", pass.step.Took
			case pass.step.Waiting != "":
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Scaling", pass.step.Waiting
			}
			ready.LastTransitionTime = now
			meta.SetStatusCondition(&o.Status.Conditions, ready)
			o.Status.ObservedGeneration = o.Generation
		},
	}
}

// NewMembersReconciler returns the reconciler of the step-wise test kind
// on the Memcached API, driving app, outside a manager.
func NewMembersReconciler(c client.Client, app *FakeMembers) reconcile.Reconciler {
	return newReconciler(membersKind(app), c, c, events.NewFakeRecorder(100), newEngine(c.Scheme(), Options{}))
}

// ErrMembersUnreachable is what FakeMembers answers when made to fail.
var ErrMembersUnreachable = errors.New("members did not answer in time")
