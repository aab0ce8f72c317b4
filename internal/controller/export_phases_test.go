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
	"github.com/app-operator/app-operator/internal/engine"
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
	// Unreadable, when set, is the error the kind's Observe returns: the
	// application could not be read at all.
	Unreadable error
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
func nextMemberStep(voters int, learner, caughtUp, quorum bool, size int) (action string, s engine.Step) {
	switch {
	case !quorum:
		return "", engine.Step{Failure: &conditions.Failure{Reason: "QuorumLost", Message: "a majority of the members is down"}}
	case learner && !caughtUp:
		return "", engine.Step{Waiting: "the new member is catching up", RequeueAfter: 10 * time.Millisecond}
	case learner:
		return "promote", engine.Step{Took: "promoted the new member", RequeueAfter: 10 * time.Millisecond}
	case voters < size:
		return "add", engine.Step{Took: fmt.Sprintf("added member %d as a learner", voters+1), RequeueAfter: 10 * time.Millisecond}
	case voters > size:
		return "remove", engine.Step{Took: fmt.Sprintf("removed member %d", voters), RequeueAfter: 10 * time.Millisecond}
	}
	return "", engine.Step{}
}

// membersSeen is what a pass of the test kind observed of the members.
type membersSeen struct {
	voters            int
	learner, caughtUp bool
	// err is the application's answer when it failed: the step reports
	// it.
	err error
}

// membersPlan is the test kind's step: action ("add", "promote",
// "remove" or none) and what the pass reports; safety for a safety step.
type membersPlan struct {
	action string
	step   engine.Step
	safety bool
}

type membersPass = engine.PassOf[struct{}, membersSeen, membersPlan, struct{}]

// membersKind is a step-wise test kind on the Memcached API: no children,
// its spec.size members reached one guarded step at a time through app.
func membersKind(app *FakeMembers) engine.Kind[*cachev1alpha1.Memcached] {
	k := engine.Kind[*cachev1alpha1.Memcached]{
		Name: "members-test",
		GVK:  cachev1alpha1.GroupVersion.WithKind("Memcached"),
		New:  func() *cachev1alpha1.Memcached { return &cachev1alpha1.Memcached{} },
	}
	return engine.Phases[*cachev1alpha1.Memcached, struct{}, membersSeen, membersPlan, struct{}]{
		Observe: func(ctx context.Context, _ engine.Clients, _ *cachev1alpha1.Memcached, _ struct{}) (membersSeen, error) {
			if err := ctx.Err(); err != nil {
				return membersSeen{}, err
			}
			if app.Unreadable != nil {
				return membersSeen{}, app.Unreadable
			}
			var seen membersSeen
			seen.voters, seen.learner, seen.caughtUp, seen.err = app.look()
			return seen, nil
		},
		Build: func(*cachev1alpha1.Memcached, *membersPass) ([]runtime.ApplyConfiguration, error) {
			if app.InvalidSpec {
				return nil, errors.New("spec.size: not a size this kind can build")
			}
			return nil, nil
		},
		Plan: func(o *cachev1alpha1.Memcached, pass *membersPass, _ engine.Observed, scope engine.Scope) membersPlan {
			if scope == engine.SafetySteps {
				// Looks, and would fence or fail over; never scales.
				return membersPlan{safety: true, step: engine.Step{Waiting: "only the safety steps while a child cannot be applied", RequeueAfter: 10 * time.Millisecond}}
			}
			seen := pass.Observed
			action, s := nextMemberStep(seen.voters, seen.learner, seen.caughtUp, !app.NoQuorum, int(o.Spec.Size))
			return membersPlan{action: action, step: s}
		},
		Act: func(ctx context.Context, _ engine.Clients, _ *cachev1alpha1.Memcached, pass *membersPass) (struct{}, engine.Step, error) {
			if err := ctx.Err(); err != nil {
				return struct{}{}, engine.Step{}, err
			}
			plan := pass.Decision
			if plan.safety {
				app.change(func() { app.SafetyPasses++; app.Changes-- })
				return struct{}{}, plan.step, nil
			}
			if err := pass.Observed.err; err != nil {
				return struct{}{}, engine.Step{}, fmt.Errorf("list members: %w", err)
			}
			switch plan.action {
			case "add":
				app.change(func() { app.learner, app.catchUp = true, app.CatchUpIn })
			case "promote":
				app.change(func() { app.learner, app.voters = false, app.voters+1 })
			case "remove":
				app.change(func() { app.voters-- })
			}
			return struct{}{}, plan.step, nil
		},
		SetStatus: func(o *cachev1alpha1.Memcached, _ *membersPass, pass engine.Report, now metav1.Time) {
			ready := metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: conditions.ReasonAvailable, Message: "Every member is in place", ObservedGeneration: o.Generation}
			switch {
			case pass.Failure != nil:
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, pass.Failure.Reason, pass.Failure.Message
			case pass.Step.Took != "":
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Scaling", pass.Step.Took
			case pass.Step.Waiting != "":
				ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Scaling", pass.Step.Waiting
			}
			ready.LastTransitionTime = now
			meta.SetStatusCondition(&o.Status.Conditions, ready)
			o.Status.ObservedGeneration = o.Generation
		},
	}.With(k)
}

// NewMembersReconciler returns the reconciler of the step-wise test kind
// on the Memcached API, driving app, outside a manager.
func NewMembersReconciler(c client.Client, app *FakeMembers) reconcile.Reconciler {
	return engine.NewReconciler(membersKind(app), c, c, events.NewFakeRecorder(100), engine.NewEnv(c.Scheme(), engine.Options{}))
}

// ErrMembersUnreachable is what FakeMembers answers when made to fail.
var ErrMembersUnreachable = errors.New("members did not answer in time")
