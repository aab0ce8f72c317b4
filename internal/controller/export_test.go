package controller

import (
	"context"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/engine"
)

// NewAppServiceReconciler returns the AppService reconciler outside a
// manager, reading through c and apiReader, so that a test decides what
// its reads return. buildErr, when set, is what every build fails with.
func NewAppServiceReconciler(c client.Client, apiReader client.Reader, buildErr error) reconcile.Reconciler {
	k := appServiceKind(Options{})
	if buildErr != nil {
		k.Build = func(*appv1.AppService, engine.Observed) ([]runtime.ApplyConfiguration, error) { return nil, buildErr }
	}
	return engine.NewReconciler(k, c, apiReader, events.NewFakeRecorder(100), engine.NewEnv(c.Scheme(), engine.Options{}))
}

// NewAppServiceReconcilerCountingCompares is NewAppServiceReconciler, and
// the number of children its passes have compared field by field with
// what they want so far.
func NewAppServiceReconcilerCountingCompares(c client.Client, apiReader client.Reader) (reconcile.Reconciler, func() int64) {
	env := engine.NewEnv(c.Scheme(), engine.Options{})
	counting := &countingConverter{TypeConverter: env.Types}
	env.Types = counting
	return engine.NewReconciler(appServiceKind(Options{}), c, apiReader, events.NewFakeRecorder(100), env), counting.calls.Load
}

// countingConverter counts the objects converted to typed values, which a
// field by field comparison starts with.
type countingConverter struct {
	managedfields.TypeConverter
	calls atomic.Int64
}

func (c *countingConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	c.calls.Add(1)
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}

// NewNamespaceQuotaReconciler returns the quota controller's reconciler
// outside a manager, reading through c (the cache) and apiReader.
func NewNamespaceQuotaReconciler(c client.Client, apiReader client.Reader) reconcile.Reconciler {
	return &namespaceQuotaReconciler{
		client:     c,
		apiReader:  apiReader,
		types:      engine.NewEnv(c.Scheme(), engine.Options{}).Types,
		fieldOwner: engine.FieldOwner(namespaceQuotaName),
	}
}

// QuotaChanged is the handler that wakes MicroServiceDeploys on a change
// to their namespace's quota, reading them through c.
func QuotaChanged(c client.Reader) handler.EventHandler { return quotaChanged(c) }

// IsNodePortTaken is isNodePortTaken.
var IsNodePortTaken = engine.IsNodePortTaken

// EchoFilter returns the bookkeeping of a controller's own writes to
// children (see ownWrites): wrote records the answer to a write, isEcho
// runs the predicate's check on an event's object, shown is a pass reading
// a child from the cache, and pending counts the writes still remembered.
func EchoFilter() (wrote func(client.Object), isEcho func(client.Object) bool, shown func(client.Object), pending func() int) {
	w := &engine.OwnWrites{}
	return w.Record, w.ConsumeEcho, func(o client.Object) { w.ConsumeEcho(o) }, w.Len
}

// StatusWrites returns an AppService reconciler reading through c, with
// the bookkeeping of its status writes (see statusWrites): shown runs the
// predicate on an update event carrying the object, and pending counts the
// writes still remembered.
func StatusWrites(c client.Client) (r reconcile.Reconciler, shown func(client.Object), pending func() int) {
	rec := engine.NewReconciler(appServiceKind(Options{}), c, c, events.NewFakeRecorder(100), engine.NewEnv(c.Scheme(), engine.Options{}))
	return rec, rec.StatusWrites().ForgetIfShown, rec.StatusWrites().Len
}

// ControllerUIDField is the cache index of children by the uid of their
// controller.
const ControllerUIDField = engine.ControllerUIDField

// IndexByController registers the operator's index of children by
// controller on indexer, as the manager's set-up does.
func IndexByController(indexer client.FieldIndexer) error {
	ks, err := registeredKinds(Options{})
	if err != nil {
		return err
	}
	index := engine.NewChildIndex(indexer)
	for _, k := range ks {
		if err := index.Register(context.Background(), k.PrunedTypes()); err != nil {
			return err
		}
	}
	return nil
}

// StatusDigest is the digest the engine keeps of a status it wrote.
func StatusDigest(obj client.Object) (uint64, bool) { return engine.StatusDigest(obj) }
