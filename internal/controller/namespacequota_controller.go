package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
)

// The quota and the PriorityClass are the only objects of their types the
// operator reads or changes; create cannot be limited to a name.
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=create
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;patch;delete,resourceNames=microservicedeploy-quota
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=create
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch;patch,resourceNames=app-operator-microservicedeploy

// namespaceQuotaName names the controller that keeps the namespaces'
// MicroServiceDeploy quotas, and its field owner.
const namespaceQuotaName = "microservicedeploy-quota"

// namespaceQuotaReconciler keeps one ResourceQuota per namespace, sized for
// every MicroServiceDeploy in it and scoped to their PriorityClass, which
// it keeps too. A quota is namespace-wide, so it cannot be the child of
// one instance. A request names the namespace's quota.
type namespaceQuotaReconciler struct {
	client     client.Client
	apiReader  client.Reader
	types      managedfields.TypeConverter
	fieldOwner string
}

func setupNamespaceQuota(mgr ctrl.Manager, env *engine.Env) error {
	r := &namespaceQuotaReconciler{
		client:     mgr.GetClient(),
		apiReader:  mgr.GetAPIReader(),
		types:      env.Types,
		fieldOwner: engine.FieldOwner(namespaceQuotaName),
	}
	toQuota := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: microservicedeploy.QuotaName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(namespaceQuotaName).
		// Only spec changes (and creations, deletions) change the quota.
		Watches(&customv1.MicroServiceDeploy{}, toQuota, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The cache holds only quotas of the name the operator uses.
		Watches(&corev1.ResourceQuota{}, toQuota).
		// A deleted or changed PriorityClass is put back by the next pass
		// of any namespace.
		Watches(&schedulingv1.PriorityClass{}, handler.EnqueueRequestsFromMapFunc(r.everyQuota)).
		Complete(r)
}

// everyQuota maps an object to the quota of every namespace that has one.
func (r *namespaceQuotaReconciler) everyQuota(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &corev1.ResourceQuotaList{}
	if err := r.client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Unable to list the quotas")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

func (r *namespaceQuotaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	list := &customv1.MicroServiceDeployList{}
	// Read only: the specs are summed, never changed.
	if err := r.client.List(ctx, list, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list MicroServiceDeploys: %w", err)
	}
	var specs []*customv1.MicroServiceDeploySpec
	for i := range list.Items {
		if m := &list.Items[i]; m.DeletionTimestamp.IsZero() {
			specs = append(specs, &m.Spec)
		}
	}

	live, err := r.read(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("read ResourceQuota %s: %w", req.Name, err)
	}
	if live != nil && !engine.AppliedBy(live, r.fieldOwner) {
		// Someone else's: never changed. The instances report it, and its
		// deletion wakes this controller up.
		log.V(1).Info("Leaving alone a ResourceQuota the operator did not create", "resourcequota", klog.KObj(live))
		return ctrl.Result{}, nil
	}

	if len(specs) == 0 {
		if live == nil {
			return ctrl.Result{}, nil
		}
		uid := live.UID
		if err := r.client.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete ResourceQuota %s: %w", live.Name, err)
		}
		log.V(1).Info("Deleted ResourceQuota of a namespace without MicroServiceDeploys", "resourcequota", klog.KObj(live))
		return ctrl.Result{}, nil
	}

	if err := r.ensurePriorityClass(ctx); err != nil {
		return ctrl.Result{}, err
	}
	var used corev1.ResourceList
	if live != nil {
		used = live.Status.Used
	}
	desired, err := engine.NewDesired(microservicedeploy.Quota(req.Namespace, specs, used))
	if err != nil {
		return ctrl.Result{}, err
	}
	var current client.Object // nil, not a nil *ResourceQuota, when missing
	if live != nil {
		current = live
	}
	if err := r.apply(ctx, current, desired); err != nil {
		return ctrl.Result{}, err
	}
	log.V(2).Info("ResourceQuota up to date", "resourcequota", klog.KRef(req.Namespace, req.Name), "instances", len(specs))
	return ctrl.Result{}, nil
}

// read returns the quota, from the cache or, on a miss, from the API
// server: a quota someone just created must be seen, never overwritten.
// Nil when there is none.
func (r *namespaceQuotaReconciler) read(ctx context.Context, key client.ObjectKey) (*corev1.ResourceQuota, error) {
	live := &corev1.ResourceQuota{}
	err := r.client.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, live)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// ensurePriorityClass applies the instances' PriorityClass unless it is
// already as wanted: their pods cannot be created without it.
func (r *namespaceQuotaReconciler) ensurePriorityClass(ctx context.Context) error {
	desired, err := engine.NewDesired(microservicedeploy.PriorityClass())
	if err != nil {
		return err
	}
	live := &schedulingv1.PriorityClass{}
	err = r.client.Get(ctx, client.ObjectKey{Name: desired.Name()}, live)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, client.ObjectKey{Name: desired.Name()}, live)
	}
	switch {
	case apierrors.IsNotFound(err):
		return r.apply(ctx, nil, desired)
	case err != nil:
		return fmt.Errorf("read PriorityClass %s: %w", desired.Name(), err)
	}
	return r.apply(ctx, live, desired)
}

// apply applies desired unless live (nil when missing) already holds it.
func (r *namespaceQuotaReconciler) apply(ctx context.Context, live client.Object, desired engine.Desired) error {
	if live != nil {
		same, err := engine.UpToDate(r.types, live, desired, r.fieldOwner)
		if err != nil {
			return fmt.Errorf("compare %s: %w", desired, err)
		}
		if same {
			return nil
		}
	}
	if _, err := engine.Apply(ctx, r.client, desired, r.fieldOwner); err != nil {
		return fmt.Errorf("apply %s: %w", desired, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applied "+desired.Kind(), "name", desired.Name())
	return nil
}
