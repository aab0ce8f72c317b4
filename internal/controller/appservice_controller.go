package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/engine"
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
func appServiceKind(opts Options) engine.Kind[*appv1.AppService] {
	return appServiceShaped(opts, "appservice", "AppService", func() *appv1.AppService { return &appv1.AppService{} },
		func(o *appv1.AppService) (*appv1.AppServiceSpec, *appv1.AppServiceStatus) { return &o.Spec, &o.Status })
}

// webServiceKind reconciles WebService: the same spec and children as AppService.
func webServiceKind(opts Options) engine.Kind[*appv1.WebService] {
	return appServiceShaped(opts, "webservice", "WebService", func() *appv1.WebService { return &appv1.WebService{} },
		func(o *appv1.WebService) (*appv1.AppServiceSpec, *appv1.AppServiceStatus) { return &o.Spec, &o.Status })
}

// appServiceShaped is the kind of an AppService's spec and status under
// the name and kind given; parts returns a resource's spec and status.
func appServiceShaped[T engine.Object](opts Options, name, kind string, newObj func() T,
	parts func(T) (*appv1.AppServiceSpec, *appv1.AppServiceStatus)) engine.Kind[T] {
	gvk := appv1.GroupVersion.WithKind(kind)
	return engine.Kind[T]{
		Name: name,
		GVK:  gvk,
		New:  newObj,
		Owns: []client.Object{&appsv1.Deployment{}, &corev1.Service{}},
		Build: func(o T, _ engine.Observed) ([]runtime.ApplyConfiguration, error) {
			spec, _ := parts(o)
			return appservice.Build(resources.OwnerOf(o, gvk), spec, opts.Defaults).Objects(), nil
		},
		SetStatus: func(o T, pass engine.Report, now metav1.Time) {
			_, st := parts(o)
			setAppServiceStatus(resources.OwnerOf(o, gvk), o.GetGeneration(), st, pass.Children, pass.Failure, now)
		},
	}
}

func setAppServiceStatus(owner resources.Owner, generation int64, st *appv1.AppServiceStatus, children engine.Observed, failure *conditions.Failure, now metav1.Time) {
	selector := labels.SelectorFromSet(appservice.Selector(owner)).String()
	status.AppService(st, generation, selector, children.Deployment(owner.Name), failure, now)
}
