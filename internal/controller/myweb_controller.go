package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/myweb"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=operator.k8s-summit.org,resources=mywebs,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.k8s-summit.org,resources=mywebs/status,verbs=patch
// Setting blockOwnerDeletion on a child needs update on the owner's finalizers
// where OwnerReferencesPermissionEnforcement admission is on.
// +kubebuilder:rbac:groups=operator.k8s-summit.org,resources=mywebs/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;patch;delete

// myWebKind reconciles MyWeb: a Service, a ConfigMap and a Deployment.
func myWebKind(opts Options) engine.Kind[*operatorv1.MyWeb] {
	gvk := operatorv1.GroupVersion.WithKind("MyWeb")
	return engine.Kind[*operatorv1.MyWeb]{
		Name: "myweb",
		GVK:  gvk,
		New:  func() *operatorv1.MyWeb { return &operatorv1.MyWeb{} },
		Owns: []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &appsv1.Deployment{}},
		Build: func(o *operatorv1.MyWeb, _ engine.Observed) ([]runtime.ApplyConfiguration, error) {
			return myweb.Build(resources.OwnerOf(o, gvk), &o.Spec, opts.Defaults).Objects(), nil
		},
		SetStatus: func(o *operatorv1.MyWeb, pass engine.Report, now metav1.Time) {
			children, failure := pass.Children, pass.Failure
			status.MyWeb(&o.Status, o.Generation, o.Spec.NodePortNumber,
				children.Deployment(o.Name), children.Service(o.Name), failure, now)
		},
	}
}
