package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/status"
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
	// owns lists the child types. The controller watches them.
	owns []client.Object
	// prunes lists the owned types of the children the kind may stop
	// wanting (an HPA once autoscaling is off): a pass deletes a child of
	// these types that the resource controls but no longer wants. The
	// other children always exist while their resource does.
	prunes []client.Object
	// lookup reads from the cache, into in, the objects other than obj that
	// decide which children obj has (the MicroServiceDeploy holding the host
	// obj wants, say); nil when obj alone decides. The engine calls it once
	// a pass, before build, and hands what it read to build and to
	// setStatus: the cache read stays in the engine's hooks, build and
	// setStatus stay pure, and both see the same answer.
	lookup func(ctx context.Context, c clients, obj T, in observed) error
	// build returns the desired children, in the order they are applied,
	// from obj and what lookup read (nil without a cluster, as in a
	// preview). It must be pure: the same inputs always give the same
	// children.
	build func(obj T, in observed) ([]runtime.ApplyConfiguration, error)
	// handover returns, for some children, values the operator sets once and
	// then leaves to another writer (the replica count of a Deployment that
	// an HPA scales). Each is an apply configuration of the same object as a
	// child, holding only those fields (see handoverNeeded). Nil when none.
	handover func(obj T) ([]runtime.ApplyConfiguration, error)
	// step, for a kind whose convergence is a sequence of guarded steps
	// against the application itself (an etcd member added, then promoted;
	// a Redis primary elected), runs once the children are applied and
	// pruned, with them and what lookup read. It reads the application's
	// own state, takes at most one step toward obj's spec, and says what
	// it did or why it waits. When a failure stopped the pass before (a
	// child refused, say), it runs with safetySteps: only a step that
	// keeps the data safe (a failover, a fence), none toward the spec. It
	// must bound every call it makes with ctx. Nil for purely declarative
	// kinds.
	step func(ctx context.Context, c clients, obj T, children observed, scope stepScope) (Step, error)
	// observe reads what the status needs beyond the children (the pods of a
	// Memcached, say) from the cache into children; nil when nothing.
	observe func(ctx context.Context, r client.Reader, obj T, children observed) error
	// setStatus writes obj's status from what the pass found and did.
	setStatus func(obj T, pass report, now metav1.Time)
	// forget drops what the kind keeps of a resource that is gone (its
	// gauges); nil when nothing.
	forget func(key client.ObjectKey)
	// watch adds watches beyond the owned children, e.g. pods by label,
	// and registers the cache indexes its map functions and lookup use.
	watch func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error)
}

// clients are what a kind's hooks reach the API server with: the
// manager's client, which reads from the cache, and api, which reads from
// the API server itself, for what must not be decided from a cache that
// may be behind.
type clients struct {
	client.Client
	api client.Reader
}

// stepScope says which steps a step hook may take in a pass.
type stepScope int

const (
	// allSteps: the children are as desired; any step toward the spec.
	allSteps stepScope = iota
	// safetySteps: a failure stopped the pass before the children were
	// all applied; only the steps that keep the data safe.
	safetySteps
)

// Step is what a step-wise kind's step hook did in one pass.
type Step struct {
	// Took names the step taken in this pass ("added member example-2");
	// empty when none was taken.
	Took string
	// Waiting says why the application has not reached the spec yet and no
	// step was taken ("member example-2 is catching up"); empty once it has.
	Waiting string
	// Cause, while waiting, is the condition reason that names why, where
	// the kind has one beyond its usual reasons; empty otherwise.
	Cause string
	// Failure, when set, is why the application cannot reach the spec
	// (quorum lost, say): the pass reports it and takes no step.
	Failure *status.Failure
	// Event, when set, is the event the pass emits for the step it took
	// (Took), one that changes the membership or the roles.
	Event *StepEvent
	// RequeueAfter is when to look at the application again; the engine
	// looks again after DefaultStepInterval when a step was taken or is
	// awaited and this is zero. The application changes without an event
	// the operator watches.
	RequeueAfter time.Duration
}

// converged reports whether the application has reached the spec.
func (s Step) converged() bool { return s.Took == "" && s.Waiting == "" && s.Failure == nil }

// DefaultStepInterval is how soon a step-wise kind looks at its application
// again after a step, or while it waits for one to complete.
const DefaultStepInterval = 2 * time.Second

// report is what a pass found and did, for setStatus.
type report struct {
	// children are the children at the end of the pass, with what lookup
	// and observe read.
	children observed
	// failure is why the pass did not converge; nil when it did.
	failure *status.Failure
	// step is what the step hook did; zero for declarative kinds, and when
	// the pass failed before the step.
	step Step
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

// registered is a kind of any type, as SetupWithManager and Build see it.
type registered interface {
	setup(mgr ctrl.Manager, env *engine) error
	// kindOf returns the kind's name and group, version and kind.
	kindOf() (string, schema.GroupVersionKind)
	// resource returns a new object of the kind.
	resource() client.Object
	// prunedTypes returns the child types the kind's controller prunes.
	prunedTypes() []client.Object
	// ownedTypes returns the child types the kind's controller owns.
	ownedTypes() []client.Object
	// buildAny builds obj's children if obj is of this kind.
	buildAny(obj runtime.Object) ([]runtime.ApplyConfiguration, bool, error)
}

func (k kind[T]) kindOf() (string, schema.GroupVersionKind) { return k.name, k.gvk }

func (k kind[T]) resource() client.Object { return k.newObject() }

func (k kind[T]) prunedTypes() []client.Object { return k.prunes }

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

// FieldOwner is the server-side apply field manager of a kind's controller.
func FieldOwner(kindName string) string { return "app-operator-" + kindName }
