package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys,verbs=get;list;watch
// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys/status,verbs=patch
// Setting blockOwnerDeletion on a child needs update on the owner's finalizers
// where OwnerReferencesPermissionEnforcement admission is on.
// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// microServiceDeployKind reconciles MicroServiceDeploy: a ServiceAccount,
// ConfigMap, Service and Deployment, an HPA while autoscaling, an Ingress
// when exposed. The namespace's ResourceQuota is kept by its own controller
// (namespacequota_controller.go); this one reads it for the status.
func microServiceDeployKind(all Options) kind[*customv1.MicroServiceDeploy] {
	gvk := customv1.GroupVersion.WithKind("MicroServiceDeploy")
	opts := all.MicroServiceDeploy
	build := func(o *customv1.MicroServiceDeploy) microservicedeploy.Children {
		return microservicedeploy.Build(resources.OwnerOf(o, gvk), &o.Spec, opts, all.Defaults)
	}
	return kind[*customv1.MicroServiceDeploy]{
		name:      "microservicedeploy",
		gvk:       gvk,
		newObject: func() *customv1.MicroServiceDeploy { return &customv1.MicroServiceDeploy{} },
		owns: []client.Object{
			&corev1.ServiceAccount{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.Deployment{},
			&autoscalingv2.HorizontalPodAutoscaler{}, &networkingv1.Ingress{},
		},
		build: func(o *customv1.MicroServiceDeploy) ([]runtime.ApplyConfiguration, error) {
			return build(o).Objects(), nil
		},
		handover: func(o *customv1.MicroServiceDeploy) ([]runtime.ApplyConfiguration, error) {
			return build(o).Handovers(), nil
		},
		observe: func(ctx context.Context, r client.Reader, o *customv1.MicroServiceDeploy, children observed) error {
			q := &corev1.ResourceQuota{}
			err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: microservicedeploy.QuotaName}, q)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			children[childKey("ResourceQuota", q.Name)] = q
			return nil
		},
		watch: func(b *builder.Builder, c client.Reader) *builder.Builder {
			return b.Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(quotaChanged(c)))
		},
		setStatus: func(o *customv1.MicroServiceDeploy, children observed, failure *status.Failure, now metav1.Time) {
			exposure := microservicedeploy.Expose(&o.Spec, opts)
			quota, _ := children[childKey("ResourceQuota", microservicedeploy.QuotaName)].(*corev1.ResourceQuota)
			obs := status.MicroServiceDeployObserved{
				Deployment:      children.Deployment(o.Name),
				Idle:            o.Spec.Idle,
				URL:             exposure.URL,
				IngressApplied:  children[childKey("Ingress", o.Name)] != nil,
				ExposureReason:  exposure.Reason,
				ExposureMessage: exposure.Message,
				Quota:           quotaStateOf(quota, &o.Spec),
				QuotaName:       microservicedeploy.QuotaName,
			}
			status.MicroServiceDeploy(&o.Status, o.Generation, obs, failure, now)
		},
	}
}

// quotaStateOf is what the namespace's quota (nil when missing) means to
// the instance with spec.
func quotaStateOf(q *corev1.ResourceQuota, spec *customv1.MicroServiceDeploySpec) status.QuotaState {
	switch {
	case q == nil:
		return status.QuotaMissing
	case !appliedBy(q, FieldOwner(namespaceQuotaName)):
		return status.QuotaForeign
	case !microservicedeploy.Covers(q.Spec.Hard, spec):
		return status.QuotaShort
	default:
		return status.QuotaCovers
	}
}

// quotaChanged maps a change to a namespace's quota to the instances whose
// QuotaReady condition it changes, read from the cache: every instance
// converging at once must not make each quota write wake them all.
func quotaChanged(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		q, ok := o.(*corev1.ResourceQuota)
		if !ok || q.Name != microservicedeploy.QuotaName {
			return nil
		}
		list := &customv1.MicroServiceDeployList{}
		if err := c.List(ctx, list, client.InNamespace(q.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Unable to list the MicroServiceDeploys of a quota", "resourcequota", klog.KObj(q))
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			m := &list.Items[i]
			if status.QuotaReasonOf(quotaStateOf(q, &m.Spec)) == quotaReasonOf(m) {
				continue
			}
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
		return reqs
	}
}

func quotaReasonOf(m *customv1.MicroServiceDeploy) string {
	if c := meta.FindStatusCondition(m.Status.Conditions, conditions.QuotaReady); c != nil {
		return c.Reason
	}
	return ""
}
