package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/podhealth"
)

// Reconciler runs the shared reconcile shape for one kind. A pass:
//
//  0. stops there, writing only the status, when the resource is paused
//     (see pausedPass);
//  1. reads the resource (read) and what its children depend on (Lookup),
//     or, for a data service, prepares and observes it (see Phases);
//  2. builds the desired children (desired);
//  3. reads the live children and refuses to touch one it does not
//     control (readChildren, checkOwnership);
//  4. applies the children that differ, handing fields over where the kind
//     has a handover (applyChanged), and prunes the unwanted (prune);
//  5. for a data service, plans and takes at most one step against the
//     application itself (takeStep), or, when a failure stopped the
//     pass at 2 to 4, only a step that keeps its data safe (guard);
//  6. computes the status and writes it once, if it changed (writeStatus).
type Reconciler[T Object] struct {
	kind       Kind[T]
	client     client.Client
	apiReader  client.Reader
	scheme     *runtime.Scheme
	recorder   events.EventRecorder
	types      managedfields.TypeConverter
	clock      clock.PassiveClock
	recheck    time.Duration
	fieldOwner string
	// indexed is whether the cache indexes the owned types by controller
	// (controllerUIDField), as the manager's does; a reconciler built
	// outside a manager (in tests) may read straight from the API server,
	// which has no such index, and prune then matches labels only.
	indexed bool

	statusWrites StatusWrites
	matched      matchedChildren
	rollouts     rolloutWait
	// ownWrites is nil outside a manager, where no informer shows anything.
	ownWrites *OwnWrites
}

func NewReconciler[T Object](k Kind[T], c client.Client, apiReader client.Reader, recorder events.EventRecorder, env *Env) *Reconciler[T] {
	return &Reconciler[T]{
		kind:       k,
		client:     c,
		apiReader:  apiReader,
		scheme:     c.Scheme(),
		recorder:   recorder,
		types:      env.Types,
		clock:      env.Options.Clock,
		recheck:    env.Options.Recheck,
		fieldOwner: FieldOwner(k.Name),
		rollouts:   rolloutWait{clock: env.Options.Clock, settle: env.Options.Settle},
	}
}

func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj, ok, err := r.read(ctx, req.NamespacedName)
	if !ok || err != nil {
		return ctrl.Result{}, err
	}
	if conditions.IsPaused(obj.GetAnnotations()) {
		return ctrl.Result{}, r.pausedPass(ctx, obj)
	}
	before := obj.DeepCopyObject().(T)
	in := Observed{}
	var data dataPass[T]
	switch {
	case r.kind.phases != nil:
		if data, err = r.kind.phases.begin(ctx, r.clients(), obj); err != nil {
			// Nothing is applied and no step is taken without what the
			// pass could not make or read; the status says why.
			out := stepFailed(err)
			return r.writeStatus(ctx, before, obj, data, Report{Children: Observed{}, Failure: out.failure}, out)
		}
	case r.kind.Lookup != nil:
		if err := r.kind.Lookup(ctx, r.clients(), obj, in); err != nil {
			return ctrl.Result{}, err
		}
	}
	// What Lookup read is in the pass from the start: the status sees it
	// too.
	pass := Report{Children: maps.Clone(in)}
	out := r.converge(ctx, obj, in, data, &pass)
	if out.ended {
		return ctrl.Result{}, nil
	}
	if r.kind.runsPods() {
		if err := observePods(ctx, r.client, r.kind.Name, obj, pass.Children); err != nil {
			return ctrl.Result{}, errors.Join(out.err, err)
		}
	}
	if r.kind.StatusReads != nil {
		if err := r.kind.StatusReads(ctx, r.client, obj, pass.Children); err != nil {
			return ctrl.Result{}, errors.Join(out.err, err)
		}
	}
	pass.Failure = out.failure
	if pass.Failure == nil {
		pass.Failure = podhealth.Failure(PodsOf(pass.Children)...)
	}
	if pass.Failure == nil {
		// No event comes when a readiness probe's time is up: the pass
		// looks again then.
		var recheck time.Duration
		pass.Failure, recheck = podhealth.ReadinessFailure(r.clock.Now(), PodsOf(pass.Children)...)
		if recheck > 0 && (out.result.RequeueAfter == 0 || recheck < out.result.RequeueAfter) {
			out.result.RequeueAfter = recheck
		}
	}
	return r.writeStatus(ctx, before, obj, data, pass, out)
}

// converge runs the phases that change the cluster and the application,
// in order; the first that stops ends the pass, save for the safety steps
// (see guard).
func (r *Reconciler[T]) converge(ctx context.Context, obj T, in Observed, data dataPass[T], pass *Report) outcome {
	if out := r.applyChildren(ctx, obj, in, data, pass); out.stopped() {
		if out.failure != nil {
			return r.guard(ctx, obj, data, pass, out)
		}
		return out
	}
	return r.takeStep(ctx, obj, data, pass, AllSteps)
}

// applyChildren brings the children to what obj wants.
func (r *Reconciler[T]) applyChildren(ctx context.Context, obj T, in Observed, data dataPass[T], pass *Report) outcome {
	desired, handovers, out := r.desired(obj, in, data)
	if out.stopped() {
		return out
	}
	live, err := r.readChildren(ctx, obj.GetNamespace(), desired, r.matched.Of(client.ObjectKeyFromObject(obj)) == nil)
	if err != nil {
		return apiFailed(err)
	}
	if out := r.checkOwnership(ctx, obj, desired, live); out.stopped() {
		return out
	}
	if out := r.applyChanged(ctx, obj, desired, handovers, live, pass.Children); out.stopped() {
		return out
	}
	if err := r.prune(ctx, obj, desired); err != nil {
		return apiFailed(err)
	}
	return outcome{}
}

// read returns the resource the pass works on; false when it is gone or
// being deleted (the garbage collector deletes the children through their
// owner references; nothing lives outside the cluster). That is the cached
// copy, unless it is behind this controller's last status write (see
// statusWrites): then the API server's.
func (r *Reconciler[T]) read(ctx context.Context, key client.ObjectKey) (T, bool, error) {
	cached := r.kind.New()
	if err := r.client.Get(ctx, key, cached); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return cached, false, client.IgnoreNotFound(err)
	}
	if !cached.GetDeletionTimestamp().IsZero() {
		return cached, false, nil
	}
	if !r.statusWrites.CacheBehind(cached) {
		return cached, true, nil
	}
	live := r.kind.New()
	if err := r.apiReader.Get(ctx, key, live); err != nil {
		return live, false, client.IgnoreNotFound(err)
	}
	if live.GetResourceVersion() == cached.GetResourceVersion() {
		// Someone else wrote the status since: the cache is current.
		r.statusWrites.Forget(key)
	}
	return live, true, nil
}

// clients returns the clients the kind's hooks use.
func (r *Reconciler[T]) clients() Clients { return Clients{Client: r.client, API: r.apiReader} }

// forget drops what the controller remembers of a deleted resource.
func (r *Reconciler[T]) forget(key client.ObjectKey) {
	r.statusWrites.Forget(key)
	r.rollouts.Forget(key)
	r.matched.Forget(key)
	if r.kind.Forget != nil {
		r.kind.Forget(key)
	}
}

// takeStep plans and takes a data service's step (see Phases), once the
// children are in place. A step taken or awaited brings the next pass
// sooner than any event would: the application changes without one.
func (r *Reconciler[T]) takeStep(ctx context.Context, obj T, data dataPass[T], pass *Report, scope Scope) outcome {
	if data == nil {
		return outcome{}
	}
	s, err := data.step(ctx, r.clients(), obj, pass.Children, scope)
	if err != nil {
		return stepFailed(err)
	}
	pass.Step = s
	for _, n := range s.Notices {
		r.recorder.Eventf(obj, nil, n.Type, n.Reason, n.Action, "%s", n.Message)
	}
	if s.Took != "" && s.Event != nil {
		r.recorder.Eventf(obj, nil, s.Event.Type, s.Event.Reason, s.Event.Action, "%s", s.Took)
	}
	if s.Converged() {
		return outcome{result: ctrl.Result{RequeueAfter: s.RequeueAfter}}
	}
	return outcome{failure: s.Failure, result: ctrl.Result{RequeueAfter: cmp.Or(s.RequeueAfter, DefaultStepInterval)}}
}

// guard runs a data service's step, limited to the steps that keep its
// data safe (SafetySteps), when a failure stopped the pass before the step:
// a child the API server refuses, a name another object holds or a spec
// that cannot be built must not hold back a failover or a fence. The
// pass keeps its failure, and comes back as soon as the step asks, even
// after a spec that waits for a change to be retried.
func (r *Reconciler[T]) guard(ctx context.Context, obj T, data dataPass[T], pass *Report, out outcome) outcome {
	if data == nil {
		return out
	}
	step := r.takeStep(ctx, obj, data, pass, SafetySteps)
	if step.err != nil {
		ctrl.LoggerFrom(ctx).Error(step.err, "The safety step failed", "failure", out.failure.Reason)
		return out
	}
	if errors.Is(out.err, reconcile.TerminalError(nil)) {
		out.err = nil
	}
	if after := step.result.RequeueAfter; after > 0 && (out.result.RequeueAfter == 0 || after < out.result.RequeueAfter) {
		out.result.RequeueAfter = after
	}
	return out
}

// writeStatus computes the status from the pass and writes it, once, if it
// changed. A pass that converged may hold the write back while a child
// Deployment's controller has not observed its spec (see rolloutWait).
func (r *Reconciler[T]) writeStatus(ctx context.Context, before, obj T, data dataPass[T], pass Report, out outcome) (ctrl.Result, error) {
	now := metav1.NewTime(r.clock.Now())
	if data != nil {
		data.setStatus(obj, pass, now)
	} else {
		r.kind.SetStatus(obj, pass, now)
	}
	if v := obj.GetResourceVersion(); v != before.GetResourceVersion() {
		// The step wrote the resource itself before it acted (a claim):
		// the status is checked against the version that write returned.
		before.SetResourceVersion(v)
	}
	if equality.Semantic.DeepEqual(before, obj) {
		return out.result, out.err
	}
	if !out.stopped() && !r.kind.NoRolloutWait {
		if wait := r.rollouts.Remaining(client.ObjectKeyFromObject(obj), pass.Children); wait > 0 {
			// The Deployment controller's update wakes the next pass; the
			// requeue is for when it does not come.
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	// The patch carries the resourceVersion it was computed from: a status
	// computed from an object someone changed since is refused (409) and
	// computed again, never written over the newer one.
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, obj, patch); err != nil {
		// Only the status error goes back to the work queue: joined with a
		// terminal error from the pass, it would never be retried.
		if out.err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("Pass failed before its status could be written", "error", out.err.Error())
		}
		return ctrl.Result{}, fmt.Errorf("write status: %w", err)
	}
	r.statusWrites.Record(obj)
	r.recordTransition(before, obj)
	r.recordResumed(before, obj)
	return out.result, out.err
}

// recordTransition emits one event when the Ready condition changes status
// or reason: a Warning for a failure, Normal otherwise. Steady passes are
// silent, and so is a new resource whose first status is Ready: an event
// would tell nothing its status does not, at the cost of a write per
// resource when thousands are created.
func (r *Reconciler[T]) recordTransition(before, after T) {
	oldReady := readyOf(before)
	newReady := readyOf(after)
	if newReady == nil || (oldReady != nil && oldReady.Status == newReady.Status && oldReady.Reason == newReady.Reason) {
		return
	}
	if oldReady == nil && newReady.Status == metav1.ConditionTrue {
		return
	}
	eventType := corev1.EventTypeNormal
	if meta.IsStatusConditionTrue(after.GetConditions(), conditions.Degraded) {
		eventType = corev1.EventTypeWarning
	}
	r.recorder.Eventf(after, nil, eventType, newReady.Reason, "Reconcile", "%s", newReady.Message)
}

func readyOf(o Object) *metav1.Condition {
	return meta.FindStatusCondition(o.GetConditions(), conditions.Ready)
}

// StatusWrites is the bookkeeping of the status writes r made and has not
// yet seen in its cache, for tests that drive r outside a manager.
func (r *Reconciler[T]) StatusWrites() *StatusWrites { return &r.statusWrites }
