package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/resources"
)

// desired builds the desired children of obj, and its handovers by child
// key: from obj and what Lookup read into in, or from a data service's
// pass.
func (r *Reconciler[T]) desired(obj T, in Observed, data dataPass[T]) ([]Desired, map[string]Desired, outcome) {
	var acs []runtime.ApplyConfiguration
	var err error
	if data != nil {
		acs, err = data.build(obj)
	} else {
		acs, err = r.kind.Build(obj, in)
	}
	if f, ok := errors.AsType[*conditions.Failure](err); ok {
		return nil, nil, inputUnusable(f, r.recheck)
	}
	if err != nil {
		return nil, nil, invalidSpec(err)
	}
	desired := make([]Desired, 0, len(acs))
	for _, ac := range acs {
		d, err := NewDesired(ac)
		if err != nil {
			return nil, nil, invalidSpec(err)
		}
		desired = append(desired, d)
	}
	if r.kind.Handover == nil {
		return desired, nil, outcome{}
	}
	acs, err = r.kind.Handover(obj)
	if err != nil {
		return nil, nil, invalidSpec(err)
	}
	handovers := make(map[string]Desired, len(acs))
	for _, ac := range acs {
		h, err := NewDesired(ac)
		if err != nil {
			return nil, nil, invalidSpec(err)
		}
		handovers[h.key()] = h
	}
	return desired, handovers, outcome{}
}

// readChildren reads the desired children at once: a child missing from
// the cache costs a request to the API server, and a new resource misses
// all of them. Nil for a child that does not exist. first says no pass has
// applied or found the children yet (see readChild).
func (r *Reconciler[T]) readChildren(ctx context.Context, namespace string, desired []Desired, first bool) ([]client.Object, error) {
	live := make([]client.Object, len(desired))
	g, ctx := errgroup.WithContext(ctx)
	for i, d := range desired {
		g.Go(func() error {
			o, err := r.readChild(ctx, namespace, d, first)
			if err != nil {
				return fmt.Errorf("read %s: %w", d, err)
			}
			live[i] = o
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if r.ownWrites != nil {
		for _, o := range live {
			if o != nil {
				// The pass has seen this version: an echo still awaited for
				// an older write is over.
				r.ownWrites.ConsumeEcho(o)
			}
		}
	}
	return live, nil
}

// readChild reads a child from the cache. The cache only holds objects
// labelled as managed by the operator, so on a miss it asks the API server:
// an unlabelled object of the same name must be found, not overwritten.
//
// For the first pass over a resource (first), the API server answers from
// its watch cache (resourceVersion "0"), which trails its storage by the
// time an event takes to arrive, as a read from storage trails a write
// between the read and the apply. A later pass misses a child mostly
// because the cache has not shown it since it was applied; it reads from
// storage, which has it, so that it is not applied again.
func (r *Reconciler[T]) readChild(ctx context.Context, namespace string, d Desired, first bool) (client.Object, error) {
	o, err := r.newObjectOf(d.gvk)
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

func (r *Reconciler[T]) newObjectOf(gvk schema.GroupVersionKind) (client.Object, error) {
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

// checkOwnership stops the pass, before anything is written, when a live
// child is an object obj neither controls nor may adopt: a conflict on any
// child leaves all of them untouched. A pass that would adopt a child
// first confirms obj with the API server (see ownerGone).
func (r *Reconciler[T]) checkOwnership(ctx context.Context, obj T, desired []Desired, live []client.Object) outcome {
	adopts := false
	for i, d := range desired {
		o := live[i]
		if o == nil || metav1.IsControlledBy(o, obj) {
			continue
		}
		if !adoptable(o, d, r.fieldOwner) {
			return childConflict(d, o, ctrl.Result{RequeueAfter: r.recheck})
		}
		adopts = true
	}
	if !adopts {
		return outcome{}
	}
	switch gone, err := r.ownerGone(ctx, obj); {
	case err != nil:
		return apiFailed(err)
	case gone:
		return outcome{ended: true}
	}
	return outcome{}
}

// ownerGone reports whether obj, as the API server has it now, is gone,
// replaced or being deleted. A child loses its owner reference when its
// owner is deleted with --cascade=orphan; a pass that began from a cached
// copy read before that deletion would give the reference back, and the
// garbage collector would then delete the child, with its pods, once the
// owner is gone. The cache may show the children orphaned before it shows
// the owner deleted; the API server never does.
func (r *Reconciler[T]) ownerGone(ctx context.Context, obj T) (bool, error) {
	now := r.kind.New()
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(obj), now); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	return now.GetUID() != obj.GetUID() || !now.GetDeletionTimestamp().IsZero(), nil
}

// adoptable reports whether live, which the resource does not control, is
// a child the resource lost its owner reference to: it has no controller,
// and either the labels that tie it to the kind and the instance (what
// `kubectl delete --cascade=orphan` leaves), or fields applied by the
// kind's own field manager, fieldOwner (what is left when someone strips
// the owner reference and the labels: the server keeps the record of who
// applied what, and only this controller applies under that name). Such
// a child is adopted by the next apply; any other same-named object is
// left alone.
func adoptable(live client.Object, d Desired, fieldOwner string) bool {
	if metav1.GetControllerOf(live) != nil {
		return false
	}
	if AppliedBy(live, fieldOwner) {
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

// applyChanged brings every desired child to what it should be, applying
// only those that differ, and records each as it now is in children.
func (r *Reconciler[T]) applyChanged(ctx context.Context, obj T, desired []Desired, handovers map[string]Desired, live []client.Object, children Observed) outcome {
	key := client.ObjectKeyFromObject(obj)
	prev := r.matched.Of(key)
	next := make([]matchedChild, 0, len(desired))
	for i, d := range desired {
		var h *Desired
		if ho, ok := handovers[d.key()]; ok {
			h = &ho
		}
		child, m, out := r.applyIfChanged(ctx, d, h, live[i], prev)
		if out.stopped() {
			return out
		}
		if m != nil {
			next = append(next, *m)
		}
		children[d.key()] = child
	}
	r.matched.Set(key, prev, next)
	return outcome{}
}

// applyIfChanged brings one child to d, handing the fields of h (nil when
// none) over as handoverNeeded says. It returns the child as it now is and,
// when the field manager owns fields on it, its match to remember.
func (r *Reconciler[T]) applyIfChanged(ctx context.Context, d Desired, h *Desired, live client.Object, prev []matchedChild) (client.Object, *matchedChild, outcome) {
	if h != nil && live != nil {
		if out := r.handOverIfNeeded(ctx, d, *h, live); out.stopped() {
			return nil, nil, out
		}
	}
	if live != nil {
		// Unchanged since a previous pass found or made it as desired, or
		// holding every field as desired.
		m, owns := matchOf(live, d, r.fieldOwner)
		same := owns && matchedBefore(prev, m)
		if !same {
			var err error
			if same, err = UpToDate(r.types, live, d, r.fieldOwner); err != nil {
				return nil, nil, apiFailed(fmt.Errorf("compare %s: %w", d, err))
			}
		}
		if same {
			return live, &m, outcome{}
		}
	}
	applied, err := r.apply(ctx, d, r.fieldOwner)
	if err != nil {
		return nil, nil, applyFailed(d, err, ctrl.Result{RequeueAfter: r.recheck})
	}
	// The server's answer holds what was just applied.
	var match *matchedChild
	if m, ok := matchOf(applied, d, r.fieldOwner); ok {
		match = &m
	}
	if h != nil && live == nil {
		// Just created: give the handed-over fields their first value.
		// Should this fail, the next pass finds them owned by no one and
		// applies them then.
		if applied, err = r.applyHandover(ctx, *h); err != nil {
			return nil, nil, applyFailed(*h, err, ctrl.Result{RequeueAfter: r.recheck})
		}
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applied "+d.gvk.Kind, strings.ToLower(d.gvk.Kind), klog.KObj(applied))
	return applied, match, outcome{}
}

// handOverIfNeeded applies the handover h of the live child d when
// handoverNeeded says so.
func (r *Reconciler[T]) handOverIfNeeded(ctx context.Context, d, h Desired, live client.Object) outcome {
	needed, err := handoverNeeded(r.types, live, h, r.fieldOwner)
	if err != nil {
		return apiFailed(fmt.Errorf("compare %s: %w", d, err))
	}
	if needed {
		if _, err := r.applyHandover(ctx, h); err != nil {
			return applyFailed(h, err, ctrl.Result{RequeueAfter: r.recheck})
		}
	}
	return outcome{}
}

// applyHandover applies h under the handover field manager. It forces
// ownership: the kind's own manager, which may still hold the fields, is
// about to let go of them.
func (r *Reconciler[T]) applyHandover(ctx context.Context, h Desired) (client.Object, error) {
	applied, err := r.apply(ctx, h, r.fieldOwner+"-handover")
	if err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Handed fields over", strings.ToLower(h.gvk.Kind), h.name, "manager", r.fieldOwner+"-handover")
	return applied, nil
}

// apply applies d under manager and records the answer among the
// controller's own writes, whose echoes wake no pass.
func (r *Reconciler[T]) apply(ctx context.Context, d Desired, manager string) (client.Object, error) {
	applied, err := Apply(ctx, r.client, d, manager)
	if err != nil {
		return nil, err
	}
	if r.ownWrites != nil {
		r.ownWrites.Record(applied)
	}
	return applied, nil
}

// prune deletes the children of the pruned types that obj controls but that
// are no longer desired (an optional child whose feature was turned off).
func (r *Reconciler[T]) prune(ctx context.Context, obj T, desired []Desired) error {
	want := map[string]bool{}
	for _, d := range desired {
		want[d.key()] = true
	}
	for _, owned := range r.kind.Prunes {
		gvk, err := apiutil.GVKForObject(owned, r.scheme)
		if err != nil {
			return err
		}
		ro, err := r.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return err
		}
		list := ro.(client.ObjectList)
		opts := []client.ListOption{client.InNamespace(obj.GetNamespace()),
			client.MatchingLabels{resources.LabelManagedBy: resources.ManagedBy, resources.LabelInstance: obj.GetName()}}
		if r.indexed {
			// The cache's own objects, not copies: prune only reads them.
			opts = append(opts, client.MatchingFields{ControllerUIDField: string(obj.GetUID())}, client.UnsafeDisableDeepCopy)
		}
		if err := r.client.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			child := item.(client.Object)
			if !metav1.IsControlledBy(child, obj) || want[ChildKey(gvk.Kind, child.GetName())] {
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
