package engine

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

	"github.com/app-operator/app-operator/api/conditions"
)

// Object is a custom resource the engine reconciles.
type Object interface {
	client.Object
	// GetConditions returns status.conditions.
	GetConditions() []metav1.Condition
	// SetConditions replaces status.conditions.
	SetConditions([]metav1.Condition)
}

// Kind describes one custom resource kind to the engine: how to build its
// children and how to report its status. Everything else is shared.
type Kind[T Object] struct {
	// Name is the lower-case kind; it names the controller and its field owner.
	Name string
	// GVK is the resource's group, version and kind.
	GVK schema.GroupVersionKind
	// New returns an empty resource of the kind.
	New func() T
	// Owns lists the child types. The controller watches them.
	Owns []client.Object
	// NoRolloutWait: the status reports no child Deployment's rollout (a
	// data service's console), so its write never waits for the
	// Deployment controller to observe one (see rolloutWait).
	NoRolloutWait bool
	// Prunes lists the owned types of the children the kind may stop
	// wanting (an HPA once autoscaling is off): a pass deletes a child of
	// these types that the resource controls but no longer wants. The
	// other children always exist while their resource does.
	Prunes []client.Object
	// Lookup reads from the cache, into in, the objects other than obj that
	// decide which children obj has (the MicroServiceDeploy holding the host
	// obj wants, say); nil when obj alone decides. The engine calls it once
	// a pass, before Build, and hands what it read to Build and to
	// SetStatus: the cache read stays in the engine's hooks, Build and
	// SetStatus stay pure, and both see the same answer.
	Lookup func(ctx context.Context, c Clients, obj T, in Observed) error
	// Build returns the desired children, in the order they are applied,
	// from obj and what Lookup read (nil without a cluster, as in a
	// preview). It must be pure: the same inputs always give the same
	// children.
	Build func(obj T, in Observed) ([]runtime.ApplyConfiguration, error)
	// Handover returns, for some children, values the operator sets once and
	// then leaves to another writer (the replica count of a Deployment that
	// an HPA scales). Each is an apply configuration of the same object as a
	// child, holding only those fields (see handoverNeeded). Nil when none.
	Handover func(obj T) ([]runtime.ApplyConfiguration, error)
	// StatusReads reads what the status needs beyond the children (the pods of a
	// Memcached, say) from the cache into children; nil when nothing.
	StatusReads func(ctx context.Context, r client.Reader, obj T, children Observed) error
	// SetStatus writes obj's status from what the pass found and did.
	SetStatus func(obj T, pass Report, now metav1.Time)
	// Forget drops what the kind keeps of a resource that is gone (its
	// gauges); nil when nothing.
	Forget func(key client.ObjectKey)
	// WakeOn are annotations of the resource whose change wakes a pass,
	// as a change of the spec does: a request a person makes through an
	// annotation (a switchover) changes no generation.
	WakeOn []string
	// Watch adds watches beyond the owned children, e.g. pods by label,
	// and registers the cache indexes its map functions and lookup use.
	Watch func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error)

	// phases, for a data service, are its Phases (see Phases.With); nil
	// for a declarative kind.
	phases phases[T]
}

// Clients are what a kind's hooks reach the API server with: the
// manager's client, which reads from the cache, and API, which reads from
// the API server itself, for what must not be decided from a cache that
// may be behind.
type Clients struct {
	client.Client
	API client.Reader
}

// Scope says which steps a data service may take in a pass (see Phases).
type Scope int

const (
	// AllSteps: the children are as desired; any step toward the spec.
	AllSteps Scope = iota
	// SafetySteps: a failure stopped the pass before the children were
	// all applied; only the steps that keep the data safe.
	SafetySteps
)

// Step is what a data service's Act did in one pass (see Phases).
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
	Failure *conditions.Failure
	// Event, when set, is the event the pass emits for the step it took
	// (Took), one that changes the membership or the roles.
	Event *StepEvent
	// Notices are events the pass emits whatever step it took or awaits:
	// what the kind tells once about the spec (an image it replaced).
	Notices []Notice
	// RequeueAfter is when to look at the application again; the engine
	// looks again after DefaultStepInterval when a step was taken or is
	// awaited and this is zero. The application changes without an event
	// the operator watches.
	RequeueAfter time.Duration
}

// Converged reports whether the application has reached the spec.
func (s Step) Converged() bool { return s.Took == "" && s.Waiting == "" && s.Failure == nil }

// StepEvent is the event a pass emits for the step it took: what changed
// the membership of a cluster or the roles of its nodes, for `kubectl
// events` to tell. The step's Took is its note.
type StepEvent struct {
	// Type is Normal, or Warning for a step that follows a failure (a
	// failover, a member's data replaced).
	Type string
	// Reason is an UpperCamel word that names the change.
	Reason string
	// Action is the planner's step.
	Action string
}

// Notice is an event a pass emits beside its step (see Step.Notices).
type Notice struct {
	// Type is Normal or Warning; Reason an UpperCamel word; Action what
	// the operator did; Message the note.
	Type, Reason, Action, Message string
}

// DefaultStepInterval is how soon a step-wise kind looks at its application
// again after a step, or while it waits for one to complete.
const DefaultStepInterval = 2 * time.Second

// Report is what a pass found and did, for SetStatus.
type Report struct {
	// Children are the children at the end of the pass, with what Lookup
	// and StatusReads read.
	Children Observed
	// Failure is why the pass did not converge; nil when it did.
	Failure *conditions.Failure
	// Step is what a data service's Act did; zero for declarative kinds,
	// and when the pass failed before the step.
	Step Step
}

// Observed holds the live objects a pass read: its children at the end of
// the pass, by kind and name, and what lookup and observe added.
type Observed map[string]client.Object

func ChildKey(kind, name string) string { return kind + "/" + name }

// Deployment returns the observed Deployment called name, or nil.
func (o Observed) Deployment(name string) *appsv1.Deployment {
	d, _ := o[ChildKey("Deployment", name)].(*appsv1.Deployment)
	return d
}

// Service returns the observed Service called name, or nil.
func (o Observed) Service(name string) *corev1.Service {
	s, _ := o[ChildKey("Service", name)].(*corev1.Service)
	return s
}

// Registered is a kind of any type, as SetupWithManager and Build see it.
type Registered interface {
	Setup(mgr ctrl.Manager, env *Env) error
	// KindOf returns the kind's name and group, version and kind.
	KindOf() (string, schema.GroupVersionKind)
	// Resource returns a new object of the kind.
	Resource() client.Object
	// PrunedTypes returns the child types the kind's controller prunes.
	PrunedTypes() []client.Object
	// OwnedTypes returns the child types the kind's controller owns.
	OwnedTypes() []client.Object
	// BuildAny builds obj's children if obj is of this kind.
	BuildAny(obj runtime.Object) ([]runtime.ApplyConfiguration, bool, error)
}

func (k Kind[T]) KindOf() (string, schema.GroupVersionKind) { return k.Name, k.GVK }

func (k Kind[T]) Resource() client.Object { return k.New() }

func (k Kind[T]) PrunedTypes() []client.Object { return k.Prunes }

func (k Kind[T]) OwnedTypes() []client.Object { return k.Owns }

func (k Kind[T]) BuildAny(obj runtime.Object) ([]runtime.ApplyConfiguration, bool, error) {
	t, ok := obj.(T)
	if !ok {
		return nil, false, nil
	}
	// Without a cluster there is nothing to look up.
	acs, err := k.Build(t, nil)
	return acs, true, err
}

// FieldOwner is the server-side apply field manager of a kind's controller.
func FieldOwner(kindName string) string { return "app-operator-" + kindName }
