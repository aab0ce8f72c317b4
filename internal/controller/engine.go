package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/status"
)

// DefaultRecheck is how often a resource blocked by something the operator
// does not watch looks again: a child it does not control, or an admission
// check (a webhook, a ValidatingAdmissionPolicy) that refused a child.
const DefaultRecheck = time.Minute

// DefaultSettle is how long a status write waits for a silent Deployment
// controller to observe a Deployment's new spec. Until it has, the status
// could only say that it is waiting for it, which is news for a few
// milliseconds: written, it would be followed at once by the status that
// reports the rollout, two writes (and two events) where one does. The
// wait goes on, up to settleMax, while the Deployment controller keeps
// reporting on other Deployments (it is behind, working through a burst
// of changes: 10,000 changed Deployments took it over three minutes on two
// cores); should it be silent (down), the status says so after the settle
// time, and the wait does not start again until the Deployment is
// observed. While the status waits, its observedGeneration is behind the
// resource's generation, which tells readers the change is in progress.
const (
	DefaultSettle = 5 * time.Second
	settleMax     = 10 * time.Minute
)

// object is a custom resource the engine reconciles.
type object interface {
	client.Object
	// GetConditions returns status.conditions.
	GetConditions() []metav1.Condition
}

// kind describes one custom resource kind to the engine: how to build its
// children and how to report its status. Everything else is shared.
type kind[T object] struct {
	// name is the lower-case kind; it names the controller and its field owner.
	name      string
	gvk       schema.GroupVersionKind
	newObject func() T
	// owns lists the child types. The controller watches them, and deletes a
	// child of these types that it controls but no longer wants.
	owns []client.Object
	// lookup reads from the cache, into in, the objects other than obj that
	// decide which children obj has (the MicroServiceDeploy holding the host
	// obj wants, say); nil when obj alone decides. The engine calls it once
	// a pass, before build, and hands what it read to build and, among the
	// observed objects, to setStatus: the cache read stays in the engine's
	// hooks, build and setStatus stay pure, and both see the same answer.
	lookup func(ctx context.Context, r client.Reader, obj T, in observed) error
	// build returns the desired children, in the order they are applied,
	// from obj and what lookup read (nil without a cluster, as in a
	// preview). It must be pure: the same inputs always give the same
	// children.
	build func(obj T, in observed) ([]runtime.ApplyConfiguration, error)
	// observe reads what the status needs beyond the children (the pods of a
	// Memcached, say) from the cache into children; nil when nothing.
	observe func(ctx context.Context, r client.Reader, obj T, children observed) error
	// setStatus writes obj's status from the children observed in this pass
	// and the pass's failure (nil when it converged).
	setStatus func(obj T, children observed, failure *status.Failure, now metav1.Time)
	// watch adds watches beyond the owned children, e.g. pods by label,
	// and registers the cache indexes its map functions and lookup use.
	watch func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error)
	// handover returns, for some children, values the operator sets once and
	// then leaves to another writer (the replica count of a Deployment that
	// an HPA scales). Each is an apply configuration of the same object as a
	// child, holding only those fields. The engine applies it under a field
	// manager of its own (FieldOwner(name)+"-handover") when the child is
	// created, while the kind's field manager still owns one of its fields
	// and the child leaves it out (server-side apply would otherwise reset a
	// field the kind stops setting to its default), or while no manager
	// owns any of them. Once another writer owns them it is never applied
	// again, so that writer is never fought. Nil when none.
	handover func(obj T) ([]runtime.ApplyConfiguration, error)
}

// observed holds the live objects a pass read: its children at the end of
// the pass, by kind and name, and what lookup and observe added.
type observed map[string]client.Object

func childKey(kind, name string) string { return kind + "/" + name }

// Deployment returns the observed Deployment called name, or nil.
func (o observed) Deployment(name string) *appsv1.Deployment {
	d, _ := o[childKey("Deployment", name)].(*appsv1.Deployment)
	return d
}

// Service returns the observed Service called name, or nil.
func (o observed) Service(name string) *corev1.Service {
	s, _ := o[childKey("Service", name)].(*corev1.Service)
	return s
}

// reconciler runs the shared reconcile shape for one kind:
// get -> build -> apply what differs -> prune -> status, written once if changed.
type reconciler[T object] struct {
	kind       kind[T]
	client     client.Client
	apiReader  client.Reader
	scheme     *runtime.Scheme
	recorder   events.EventRecorder
	types      managedfields.TypeConverter
	clock      clock.PassiveClock
	recheck    time.Duration
	settleFor  time.Duration
	fieldOwner string
	// written holds, by resource, what the last status write of this
	// controller left (a writtenStatus), until a pass finds the cache caught
	// up with it. An entry outlives the pass, often until the resource
	// changes again, so it holds no copy of the object: one per resource.
	written sync.Map
	// settling holds, by resource, since when its status write has waited
	// for the Deployment controller (see DefaultSettle): a time.Time, kept
	// until the Deployment is observed.
	settling sync.Map
	// answered is when the Deployment controller last reported on one of
	// this kind's Deployments (a status change), in Unix nanoseconds.
	answered atomic.Int64
	// indexed is whether the cache indexes the owned types by controller
	// (controllerIndex), as the manager's does; a reconciler built outside
	// a manager (in tests) may read straight from the API server, which
	// has no such index, and prune then matches labels only.
	indexed bool
	// matched holds, by resource, the children its last pass found or made
	// as desired (a []matchedChild): a child unchanged since is not compared
	// field by field again, which is most of a steady pass's work.
	matched sync.Map
	// echoes holds, by child uid, the resourceVersion this controller's
	// last write to the child returned, until the child's informer shows
	// that version or a later one (see notEchoOfOwnWrite). Nil outside a
	// manager, where no informer shows anything.
	echoes *sync.Map
	// writing holds, by childWriteKey, a channel closed when this
	// controller's write to that child has its answer recorded in echoes:
	// the informer may hand the child's event on before the answer
	// arrives, and the predicate waits for it then.
	writing sync.Map
}

// matchedChild is a child found or made as desired: a digest of its uid
// (a child deleted and made again is another; the digest rather than the
// uid, which would keep the string of an object the cache has let go of),
// the digest of the fields the kind's manager owned on it then
// (ownedDigest) and that of the apply configuration it matched
// (desiredChild.digest).
type matchedChild struct {
	uid     uint64
	owned   uint64
	desired uint64
}

// matchOf returns live, wanted as d, as a matchedChild; false when the
// kind's manager, manager, owns no fields on it.
func matchOf(live client.Object, d desiredChild, manager string) (matchedChild, bool) {
	owned, ok := ownedDigest(live, manager)
	return matchedChild{uid: digestOf([]byte(live.GetUID())), owned: owned, desired: d.digest}, ok
}

// writtenStatus is the resourceVersion a status write returned, and a
// digest of the status it wrote.
type writtenStatus struct {
	resourceVersion string
	status          uint64
}

// settings are the engine's operator-wide settings.
type settings struct {
	clock   clock.PassiveClock
	recheck time.Duration
	// settle is how long a status write waits for a silent Deployment
	// controller (see DefaultSettle).
	settle time.Duration
	// workers is the number of concurrent reconciles per kind; 1 when zero.
	workers int
}

// registered is a kind of any type, as SetupWithManager and Build see it.
type registered interface {
	setup(mgr ctrl.Manager, env settings) error
	// ownedTypes returns the child types the kind's controller owns.
	ownedTypes() []client.Object
	// buildAny builds obj's children if obj is of this kind.
	buildAny(obj runtime.Object) ([]runtime.ApplyConfiguration, bool, error)
}

func (k kind[T]) ownedTypes() []client.Object { return k.owns }

func (k kind[T]) buildAny(obj runtime.Object) ([]runtime.ApplyConfiguration, bool, error) {
	t, ok := obj.(T)
	if !ok {
		return nil, false, nil
	}
	// Without a cluster there is nothing to look up.
	acs, err := k.build(t, nil)
	return acs, true, err
}

// newReconciler returns the kind's reconciler, reading through c (the cache)
// and apiReader (the API server).
func (k kind[T]) newReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, recorder events.EventRecorder, env settings) *reconciler[T] {
	return &reconciler[T]{
		kind:       k,
		client:     c,
		apiReader:  apiReader,
		scheme:     scheme,
		recorder:   recorder,
		types:      applyconfigurations.NewTypeConverter(scheme),
		clock:      env.clock,
		recheck:    env.recheck,
		settleFor:  env.settle,
		fieldOwner: FieldOwner(k.name),
	}
}

func (k kind[T]) setup(mgr ctrl.Manager, env settings) error {
	r := k.newReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), mgr.GetEventRecorder("app-operator-"+k.name), env)
	r.indexed = true
	r.echoes = &sync.Map{}
	// Status writes bump no generation: the predicate keeps the operator's
	// own status writes from waking it up again. statusShown sees every
	// update first.
	b := ctrl.NewControllerManagedBy(mgr).
		Named(k.name).
		For(k.newObject(), builder.WithPredicates(r.statusShown(), predicate.GenerationChangedPredicate{})).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: max(env.workers, 1)})
	for _, o := range k.owns {
		gvk, err := apiutil.GVKForObject(o, mgr.GetScheme())
		if err != nil {
			return err
		}
		if _, ok := o.(*appsv1.Deployment); ok {
			b = b.Owns(o, builder.WithPredicates(r.deploymentAnswers(), r.notEchoOfOwnWrite(gvk.Kind)))
			continue
		}
		b = b.Owns(o, builder.WithPredicates(r.notEchoOfOwnWrite(gvk.Kind)))
	}
	if k.watch != nil {
		var err error
		if b, err = k.watch(mgr, b); err != nil {
			return fmt.Errorf("watch for %s: %w", k.name, err)
		}
	}
	return b.Complete(r)
}

// FieldOwner is the server-side apply field manager of a kind's controller.
func FieldOwner(kindName string) string { return "app-operator-" + kindName }

func (r *reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.kind.newObject()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Delete(req.NamespacedName)
			r.settling.Delete(req.NamespacedName)
			r.matched.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		// The garbage collector deletes the children through their owner
		// references; nothing lives outside the cluster.
		return ctrl.Result{}, nil
	}
	obj, err := r.fresh(ctx, req.NamespacedName, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	before := obj.DeepCopyObject().(T)

	// What the children depend on beyond obj is read here, once, rather
	// than by build, which stays pure (see kind.lookup).
	in := observed{}
	if r.kind.lookup != nil {
		if err := r.kind.lookup(ctx, r.client, obj, in); err != nil {
			return ctrl.Result{}, err
		}
	}
	children := observed{}
	result, failure, err := r.converge(ctx, obj, in, children)
	maps.Copy(children, in)
	if r.kind.observe != nil {
		if oerr := r.kind.observe(ctx, r.client, obj, children); oerr != nil {
			return ctrl.Result{}, errors.Join(err, oerr)
		}
	}
	r.kind.setStatus(obj, children, failure, metav1.NewTime(r.clock.Now()))
	if !equality.Semantic.DeepEqual(before, obj) {
		if err == nil && failure == nil {
			if wait := r.settle(req.NamespacedName, children); wait > 0 {
				// The Deployment controller's update wakes the next pass;
				// the requeue is for when it does not come.
				return ctrl.Result{RequeueAfter: wait}, nil
			}
		}
		// The patch carries the resourceVersion it was computed from: a
		// status computed from an object someone changed since is refused
		// (409) and computed again, never written over the newer one.
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if serr := r.client.Status().Patch(ctx, obj, patch); serr != nil {
			// Only the status error goes back to the work queue: joined with
			// a terminal error from the pass, it would never be retried.
			if err != nil {
				ctrl.LoggerFrom(ctx).V(1).Info("Pass failed before its status could be written", "error", err.Error())
			}
			return ctrl.Result{}, fmt.Errorf("write status: %w", serr)
		}
		if digest, ok := statusDigest(obj); ok {
			r.written.Store(req.NamespacedName, writtenStatus{resourceVersion: obj.GetResourceVersion(), status: digest})
		}
		r.recordTransition(before, obj)
	}
	return result, err
}

// settle returns how much longer the status write of the resource key may
// wait for the Deployment controller to observe a child Deployment's spec
// (see DefaultSettle); 0 to write it now. The wait starts at the first
// pass that finds a Deployment not yet observed, and is not started again
// until one is.
func (r *reconciler[T]) settle(key client.ObjectKey, children observed) time.Duration {
	if !awaitingDeploymentController(children) {
		r.settling.Delete(key)
		return 0
	}
	now := r.clock.Now()
	since, _ := r.settling.LoadOrStore(key, now)
	waited := now.Sub(since.(time.Time))
	wait := r.settleFor - waited
	if lastAnswer := r.settleFor - now.Sub(time.Unix(0, r.answered.Load())); lastAnswer > wait {
		wait = min(lastAnswer, settleMax-waited)
	}
	return max(wait, 0)
}

// deploymentAnswers records, as Deployments of the kind change, when their
// controller last reported on one (see settle).
func (r *reconciler[T]) deploymentAnswers() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok := e.ObjectOld.(*appsv1.Deployment)
		cur, ok2 := e.ObjectNew.(*appsv1.Deployment)
		if ok && ok2 && !equality.Semantic.DeepEqual(old.Status, cur.Status) {
			r.answered.Store(r.clock.Now().UnixNano())
		}
		return true
	}}
}

// notEchoOfOwnWrite drops a child's event that only shows a write of this
// controller's own: the pass that made the write computed the status from
// the server's answer, which is the object the event carries, so another
// pass would find nothing to do. Any other event of the child passes.
func (r *reconciler[T]) notEchoOfOwnWrite(kind string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			r.awaitWrite(kind, e.Object)
			return !r.seen(e.Object)
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			r.awaitWrite(kind, e.ObjectNew)
			return !r.seen(e.ObjectNew)
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.echoes.Delete(e.Object.GetUID())
			return true
		},
	}
}

// seen is called with each version of a child the informer shows, and
// each a pass reads from the cache. It reports whether child is the
// version this controller's last write to it returned, and forgets that
// write once child is that version or a later one: versions come in order,
// and the answer to a write may arrive after the informer has handed its
// event on, so a pass reading the version ends the wait too. An older
// version is from before the write.
func (r *reconciler[T]) seen(child client.Object) bool {
	if r.echoes == nil {
		return false
	}
	v, ok := r.echoes.Load(child.GetUID())
	if !ok {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(child.GetResourceVersion(), v.(string))
	if err == nil && order < 0 {
		return false
	}
	r.echoes.CompareAndDelete(child.GetUID(), v)
	return err == nil && order == 0
}

// wrote records the version of child that a write of this controller
// returned (see notEchoOfOwnWrite).
func (r *reconciler[T]) wrote(child client.Object) {
	r.echoes.Store(child.GetUID(), child.GetResourceVersion())
}

// maxAwaitWrite bounds how long a child's event waits for the answer to
// this controller's write to the child (see awaitWrite).
const maxAwaitWrite = 5 * time.Second

// childWriteKey names a child in writing.
func childWriteKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// apply applies d under manager and, under a manager, records the answer
// (wrote). While the write is under way, an event of the child waits for
// the answer (awaitWrite): the server may have sent the event first.
func (r *reconciler[T]) apply(ctx context.Context, d desiredChild, manager string) (client.Object, error) {
	if r.echoes == nil {
		return applyChild(ctx, r.client, d, manager)
	}
	key := childWriteKey(d.gvk.Kind, d.namespace, d.name)
	done := make(chan struct{})
	r.writing.Store(key, done)
	defer func() {
		r.writing.CompareAndDelete(key, done)
		close(done)
	}()
	applied, err := applyChild(ctx, r.client, d, manager)
	if err != nil {
		return nil, err
	}
	r.wrote(applied)
	return applied, nil
}

// awaitWrite waits, for at most maxAwaitWrite, until a write of this
// controller to o under way has its answer recorded.
func (r *reconciler[T]) awaitWrite(kind string, o client.Object) {
	v, ok := r.writing.Load(childWriteKey(kind, o.GetNamespace(), o.GetName()))
	if !ok {
		return
	}
	select {
	case <-v.(chan struct{}):
	case <-time.After(maxAwaitWrite):
	}
}

// awaitingDeploymentController reports whether a Deployment among the
// observed objects has a spec its controller has not observed yet.
func awaitingDeploymentController(children observed) bool {
	for _, o := range children {
		if d, ok := o.(*appsv1.Deployment); ok && d.Status.ObservedGeneration < d.Generation {
			return true
		}
	}
	return false
}

// fresh returns the resource the pass computes its status against. That
// is the cached one, unless this controller wrote a status the cache has
// not shown yet: compared with the older cached status, a pass could then
// find nothing to change and leave the newer, now wrong, status in place.
// Only then is the resource read from the API server.
func (r *reconciler[T]) fresh(ctx context.Context, key client.ObjectKey, cached T) (T, error) {
	v, ok := r.written.Load(key)
	if !ok {
		return cached, nil
	}
	last := v.(writtenStatus)
	if cached.GetResourceVersion() == last.resourceVersion {
		r.written.Delete(key)
		return cached, nil
	}
	if digest, ok := statusDigest(cached); ok && digest == last.status {
		r.written.Delete(key)
		return cached, nil
	}
	live := r.kind.newObject()
	if err := r.apiReader.Get(ctx, key, live); err != nil {
		return cached, client.IgnoreNotFound(err)
	}
	if live.GetResourceVersion() == cached.GetResourceVersion() {
		// Someone else wrote the status since: the cache is current.
		r.written.Delete(key)
	}
	return live, nil
}

// statusShown forgets the status write of a resource (written) once its
// informer shows the version the write returned, or a later one: a pass
// reads that version from the cache, and fresh would forget it then. The
// write's own event wakes no pass (it bumps no generation), so without
// this every resource would keep its entry until its spec changed. An
// event that arrives before the write's answer is recorded leaves the
// entry to fresh. It lets every event through.
func (r *reconciler[T]) statusShown() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		key := client.ObjectKeyFromObject(e.ObjectNew)
		v, ok := r.written.Load(key)
		if !ok {
			return true
		}
		order, err := resourceversion.CompareResourceVersion(e.ObjectNew.GetResourceVersion(), v.(writtenStatus).resourceVersion)
		if err == nil && order >= 0 {
			r.written.CompareAndDelete(key, v)
		}
		return true
	}}
}

// statusDigest is a hash of obj's status (FNV-1a of the JSON of its Status
// field, whose encoding of equal values is equal); false if obj has no
// such field or it cannot be encoded. It reads nothing else of obj.
func statusDigest(obj client.Object) (uint64, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	st := v.Elem().FieldByName("Status")
	if !st.IsValid() {
		return 0, false
	}
	data, err := json.Marshal(st.Addr().Interface())
	if err != nil {
		return 0, false
	}
	return digestOf(data), true
}

// converge applies the desired children, built from obj and what lookup
// read into in, and prunes the unwanted ones. It returns the failure to
// report, if any, and the error for the work queue.
func (r *reconciler[T]) converge(ctx context.Context, obj T, in, children observed) (ctrl.Result, *status.Failure, error) {
	acs, err := r.kind.build(obj, in)
	if err != nil {
		f := &status.Failure{Reason: conditions.ReasonInvalidSpec, Message: err.Error()}
		return ctrl.Result{}, f, reconcile.TerminalError(err)
	}
	desired := make([]desiredChild, 0, len(acs))
	for _, ac := range acs {
		d, err := newDesiredChild(ac)
		if err != nil {
			return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonInvalidSpec, Message: err.Error()}, reconcile.TerminalError(err)
		}
		desired = append(desired, d)
	}

	handovers, err := r.handovers(obj)
	if err != nil {
		return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonInvalidSpec, Message: err.Error()}, reconcile.TerminalError(err)
	}

	key := client.ObjectKeyFromObject(obj)
	var prev []matchedChild
	if v, ok := r.matched.Load(key); ok {
		prev = v.([]matchedChild)
	}

	// Read every child first, so that a conflict on any of them leaves all
	// of them untouched.
	live, err := r.getChildren(ctx, obj.GetNamespace(), desired, prev == nil)
	if err != nil {
		return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonApplyFailed, Message: err.Error()}, err
	}
	for i, d := range desired {
		if live[i] != nil {
			r.seen(live[i])
		}
		if o := live[i]; o != nil && !metav1.IsControlledBy(o, obj) && !adoptable(o, d, r.fieldOwner) {
			owner := "it is not controlled by any resource"
			if ref := metav1.GetControllerOf(o); ref != nil {
				owner = fmt.Sprintf("it is controlled by %s %s", ref.Kind, ref.Name)
			}
			f := &status.Failure{Reason: conditions.ReasonChildConflict, Message: fmt.Sprintf(
				"%s %s already exists and %s; the operator leaves it alone until it is deleted or renamed", d.gvk.Kind, d.name, owner)}
			return ctrl.Result{RequeueAfter: r.recheck}, f, nil
		}
	}

	next := make([]matchedChild, 0, len(desired))
	log := ctrl.LoggerFrom(ctx)
	for i, d := range desired {
		h, hasHandover := handovers[childKey(d.gvk.Kind, d.name)]
		if hasHandover && live[i] != nil {
			needed, err := handoverNeeded(r.types, live[i], h, r.fieldOwner)
			if err != nil {
				return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonApplyFailed, Message: fmt.Sprintf("compare %s: %v", d, err)}, err
			}
			if needed {
				if _, err := r.applyHandover(ctx, h); err != nil {
					return r.applyFailure(h, err)
				}
			}
		}
		if live[i] != nil {
			// Unchanged since a previous pass found or made it as desired.
			m, owns := matchOf(live[i], d, r.fieldOwner)
			same := owns && slices.Contains(prev, m)
			if !same {
				var err error
				if same, err = upToDate(r.types, live[i], d, r.fieldOwner); err != nil {
					return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonApplyFailed, Message: fmt.Sprintf("compare %s: %v", d, err)}, err
				}
			}
			if same {
				next = append(next, m)
				children[childKey(d.gvk.Kind, d.name)] = live[i]
				continue
			}
		}
		applied, err := r.apply(ctx, d, r.fieldOwner)
		if err != nil {
			return r.applyFailure(d, err)
		}
		// The server's answer holds what was just applied.
		if m, ok := matchOf(applied, d, r.fieldOwner); ok {
			next = append(next, m)
		}
		if hasHandover && live[i] == nil {
			// Just created: give the handed-over fields their first value.
			// Should this fail, the next pass finds them owned by no one and
			// applies them then.
			if applied, err = r.applyHandover(ctx, h); err != nil {
				return r.applyFailure(h, err)
			}
		}
		children[childKey(d.gvk.Kind, d.name)] = applied
		log.V(1).Info("Applied "+d.gvk.Kind, strings.ToLower(d.gvk.Kind), klog.KObj(applied))
	}
	if !slices.Equal(prev, next) {
		r.matched.Store(key, next)
	}

	if err := r.prune(ctx, obj, desired); err != nil {
		return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonApplyFailed, Message: err.Error()}, err
	}
	return ctrl.Result{}, nil, nil
}

// adoptable reports whether live, which obj does not control, is a child
// obj lost its owner reference to: it has no controller, and either the
// labels that tie it to the kind and the instance (what
// `kubectl delete --cascade=orphan` leaves), or fields applied by the
// kind's own field manager, fieldOwner (what is left when someone strips
// the owner reference and the labels: the server keeps the record of who
// applied what, and only this controller applies under that name). Such
// a child is adopted by the next apply; any other same-named object is
// left alone.
func adoptable(live client.Object, d desiredChild, fieldOwner string) bool {
	if metav1.GetControllerOf(live) != nil {
		return false
	}
	if appliedBy(live, fieldOwner) {
		return true
	}
	fields, err := d.fields()
	if err != nil {
		return false
	}
	want, _, _ := unstructured.NestedStringMap(fields, "metadata", "labels")
	have := live.GetLabels()
	for _, k := range []string{resources.LabelManagedBy, resources.LabelName, resources.LabelInstance} {
		if want[k] == "" || have[k] != want[k] {
			return false
		}
	}
	return true
}

// handovers returns the kind's handover apply configurations by child key.
func (r *reconciler[T]) handovers(obj T) (map[string]desiredChild, error) {
	if r.kind.handover == nil {
		return nil, nil
	}
	acs, err := r.kind.handover(obj)
	if err != nil {
		return nil, err
	}
	out := make(map[string]desiredChild, len(acs))
	for _, ac := range acs {
		h, err := newDesiredChild(ac)
		if err != nil {
			return nil, err
		}
		out[childKey(h.gvk.Kind, h.name)] = h
	}
	return out, nil
}

// applyHandover applies h under the handover field manager. It forces
// ownership: the kind's own manager, which may still hold the fields, is
// about to let go of them.
func (r *reconciler[T]) applyHandover(ctx context.Context, h desiredChild) (client.Object, error) {
	applied, err := r.apply(ctx, h, r.fieldOwner+"-handover")
	if err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Handed fields over", strings.ToLower(h.gvk.Kind), h.name, "manager", r.fieldOwner+"-handover")
	return applied, nil
}

// getChildren reads the desired children (getChild), at once: a child
// missing from the cache costs a request to the API server, and a new
// resource misses all of them. Nil for a child that does not exist. first
// says no pass has applied or found the children yet (see getChild).
func (r *reconciler[T]) getChildren(ctx context.Context, namespace string, desired []desiredChild, first bool) ([]client.Object, error) {
	live := make([]client.Object, len(desired))
	g, ctx := errgroup.WithContext(ctx)
	for i, d := range desired {
		g.Go(func() error {
			o, err := r.getChild(ctx, namespace, d, first)
			if err != nil {
				return fmt.Errorf("read %s: %w", d, err)
			}
			live[i] = o
			return nil
		})
	}
	return live, g.Wait()
}

// getChild reads a child from the cache. The cache only holds objects
// labelled as managed by the operator, so on a miss it asks the API server:
// an unlabelled object of the same name must be found, not overwritten.
//
// For the first pass over a resource (first), the API server answers from
// its watch cache (resourceVersion "0"), which trails its storage by the
// time an event takes to arrive (milliseconds), as a read from storage
// trails a write between the read and the apply. A later pass misses a
// child mostly because the cache has not shown it since it was applied; it
// reads from storage, which has it, so that it is not applied again.
func (r *reconciler[T]) getChild(ctx context.Context, namespace string, d desiredChild, first bool) (client.Object, error) {
	o, err := r.newChild(d.gvk)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: namespace, Name: d.name}
	err = r.client.Get(ctx, key, o)
	if apierrors.IsNotFound(err) {
		var opts []client.GetOption
		if first {
			opts = append(opts, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
		}
		err = r.apiReader.Get(ctx, key, o, opts...)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (r *reconciler[T]) newChild(gvk schema.GroupVersionKind) (client.Object, error) {
	ro, err := r.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	o, ok := ro.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	return o, nil
}

// prune deletes the children of the owned types that obj controls but that
// are no longer desired (an optional child whose feature was turned off).
func (r *reconciler[T]) prune(ctx context.Context, obj T, desired []desiredChild) error {
	want := map[string]bool{}
	for _, d := range desired {
		want[childKey(d.gvk.Kind, d.name)] = true
	}
	for _, owned := range r.kind.owns {
		gvk, err := apiutil.GVKForObject(owned, r.scheme)
		if err != nil {
			return err
		}
		ro, err := r.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return err
		}
		tl := ro.(client.ObjectList)
		opts := []client.ListOption{client.InNamespace(obj.GetNamespace()),
			client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy, resources.LabelInstance: obj.GetName()}}
		if r.indexed {
			// The cache's own objects, not copies: prune only reads them.
			// The bucket holds other resources' children too, which the
			// labels and the controller check below leave out.
			opts = append(opts, client.MatchingFields{controllerIndex: controllerBucket(obj.GetUID())}, client.UnsafeDisableDeepCopy)
		}
		if err := r.client.List(ctx, tl, opts...); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		items, err := meta.ExtractList(tl)
		if err != nil {
			return err
		}
		for _, item := range items {
			child := item.(client.Object)
			if !metav1.IsControlledBy(child, obj) || want[childKey(gvk.Kind, child.GetName())] {
				continue
			}
			uid := child.GetUID()
			if err := r.client.Delete(ctx, child, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s: %w", gvk.Kind, child.GetName(), err)
			}
			ctrl.LoggerFrom(ctx).V(1).Info("Deleted "+gvk.Kind+" no longer wanted", strings.ToLower(gvk.Kind), klog.KObj(child))
		}
	}
	return nil
}

// applyFailure turns an apply error into the result, the condition to
// report and the error for the work queue. Nothing the API server answers
// is terminal: only a spec the builders cannot turn into children is (see
// converge). A child refused at admission (a webhook, a
// ValidatingAdmissionPolicy, an immutable field) is reported and looked at
// again every recheck interval, since what refused it may change without
// the operator being told; a node port taken by another Service, which may
// be released, and transient errors are retried with backoff.
func (r *reconciler[T]) applyFailure(d desiredChild, err error) (ctrl.Result, *status.Failure, error) {
	msg := fmt.Sprintf("apply %s: %s", d, apiMessage(err))
	switch {
	case isNodePortTaken(err):
		return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonNodePortAllocated, Message: msg}, err
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		return ctrl.Result{RequeueAfter: r.recheck}, &status.Failure{Reason: conditions.ReasonApplyRejected, Message: msg}, nil
	default:
		return ctrl.Result{}, &status.Failure{Reason: conditions.ReasonApplyFailed, Message: msg}, err
	}
}

// isNodePortTaken reports whether the API server refused a Service
// because another Service holds a node port it asks for.
func isNodePortTaken(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "provided port is already allocated")
}

func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}

// recordTransition emits one event when the Ready condition changes status
// or reason: a Warning for a failure, Normal otherwise. Steady passes are
// silent, and so is a new resource whose first status is Ready: an event
// would tell nothing its status does not, at the cost of a write per
// resource when thousands are created.
func (r *reconciler[T]) recordTransition(before, after T) {
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

func readyOf(o object) *metav1.Condition {
	return meta.FindStatusCondition(o.GetConditions(), conditions.Ready)
}
