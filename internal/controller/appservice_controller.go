package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/appservice"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=app.example.com,resources=appservices;webservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=app.example.com,resources=appservices/status;webservices/status,verbs=patch
// Setting blockOwnerDeletion on a child needs update on the owner's finalizers
// where OwnerReferencesPermissionEnforcement admission is on.
// +kubebuilder:rbac:groups=app.example.com,resources=appservices/finalizers;webservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete

// appServiceKind reconciles AppService: a Deployment and a Service.
func appServiceKind(opts Options) kind[*appv1.AppService] {
	gvk := appv1.GroupVersion.WithKind("AppService")
	return kind[*appv1.AppService]{
		name:      "appservice",
		gvk:       gvk,
		newObject: func() *appv1.AppService { return &appv1.AppService{} },
		owns:      []client.Object{&appsv1.Deployment{}, &corev1.Service{}},
		build: func(o *appv1.AppService, _ observed) ([]runtime.ApplyConfiguration, error) {
			return appservice.Build(resources.OwnerOf(o, gvk), &o.Spec, opts.Defaults).Objects(), nil
		},
		setStatus: func(o *appv1.AppService, pass report, now metav1.Time) {
			children, failure := pass.children, pass.failure
			setAppServiceStatus(resources.OwnerOf(o, gvk), o.Generation, &o.Status, children, failure, now)
		},
	}
}

// webServiceKind reconciles WebService: the same spec and children as AppService.
func webServiceKind(opts Options) kind[*appv1.WebService] {
	gvk := appv1.GroupVersion.WithKind("WebService")
	return kind[*appv1.WebService]{
		name:      "webservice",
		gvk:       gvk,
		newObject: func() *appv1.WebService { return &appv1.WebService{} },
		owns:      []client.Object{&appsv1.Deployment{}, &corev1.Service{}},
		build: func(o *appv1.WebService, _ observed) ([]runtime.ApplyConfiguration, error) {
			return appservice.Build(resources.OwnerOf(o, gvk), &o.Spec, opts.Defaults).Objects(), nil
		},
		setStatus: func(o *appv1.WebService, pass report, now metav1.Time) {
			children, failure := pass.children, pass.failure
			setAppServiceStatus(resources.OwnerOf(o, gvk), o.Generation, &o.Status, children, failure, now)
		},
	}
}

func setAppServiceStatus(owner resources.Owner, generation int64, st *appv1.AppServiceStatus, children observed, failure *status.Failure, now metav1.Time) {
	selector := labels.SelectorFromSet(appservice.Selector(owner)).String()
	status.AppService(st, generation, selector, children.Deployment(owner.Name), failure, now)
}
