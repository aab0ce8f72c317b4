package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
)

// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;patch;delete

// namespaceQuotaName names the controller that keeps the namespaces'
// MicroServiceDeploy quotas, and its field owner.
const namespaceQuotaName = "microservicedeploy-quota"

// namespaceQuotaReconciler keeps one ResourceQuota per namespace, sized for
// every MicroServiceDeploy in it. A quota is namespace-wide, so it cannot be
// the child of one instance: each instance is one of its (non-controller)
// owners. A request names the namespace's quota.
type namespaceQuotaReconciler struct {
	client     client.Client
	types      managedfields.TypeConverter
	fieldOwner string
}

func setupNamespaceQuota(mgr ctrl.Manager) error {
	r := &namespaceQuotaReconciler{
		client:     mgr.GetClient(),
		types:      applyconfigurations.NewTypeConverter(mgr.GetScheme()),
		fieldOwner: FieldOwner(namespaceQuotaName),
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
		Complete(r)
}

func (r *namespaceQuotaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	list := &customv1.MicroServiceDeployList{}
	if err := r.client.List(ctx, list, client.InNamespace(req.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list MicroServiceDeploys: %w", err)
	}
	gvk := customv1.GroupVersion.WithKind("MicroServiceDeploy")
	var instances []microservicedeploy.Instance
	for i := range list.Items {
		m := &list.Items[i]
		if m.DeletionTimestamp.IsZero() {
			instances = append(instances, microservicedeploy.Instance{Owner: resources.OwnerOf(m, gvk), Spec: &m.Spec})
		}
	}

	live := &corev1.ResourceQuota{}
	if err := r.client.Get(ctx, req.NamespacedName, live); apierrors.IsNotFound(err) {
		live = nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("read ResourceQuota %s: %w", req.Name, err)
	}
	if live != nil && !microservicedeploy.IsOperatorQuota(live.Labels) {
		// Someone else's: never overwritten. The instances report it, and
		// its deletion wakes this controller up.
		log.V(1).Info("Leaving alone a ResourceQuota the operator did not create", "resourcequota", klog.KObj(live))
		return ctrl.Result{}, nil
	}

	if len(instances) == 0 {
		// The garbage collector would delete it too (every owner is gone);
		// deleting it here does not wait for it.
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

	desired, err := newDesiredChild(microservicedeploy.Quota(req.Namespace, instances))
	if err != nil {
		return ctrl.Result{}, err
	}
	if live != nil {
		same, err := upToDate(r.types, live, desired.gvk, r.fieldOwner, desired.fields)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("compare ResourceQuota %s: %w", req.Name, err)
		}
		if same {
			return ctrl.Result{}, nil
		}
	}
	if err := r.client.Apply(ctx, desired.ac, client.FieldOwner(r.fieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply ResourceQuota %s: %w", req.Name, err)
	}
	log.V(1).Info("Applied ResourceQuota", "resourcequota", klog.KRef(req.Namespace, req.Name), "instances", len(instances))
	return ctrl.Result{}, nil
}
