package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		return microservicedeploy.Build(resources.OwnerOf(o, gvk), &o.Spec, opts, all.Defaults, "")
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
		related: []client.Object{&corev1.ResourceQuota{}},
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
				Quota:           quota,
				QuotaName:       microservicedeploy.QuotaName,
				UID:             o.UID,
			}
			if quota != nil {
				obs.QuotaIsOperators = microservicedeploy.IsOperatorQuota(quota.Labels)
			}
			status.MicroServiceDeploy(&o.Status, o.Generation, obs, failure, now)
		},
	}
}
