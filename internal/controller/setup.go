// Package controller holds the reconcilers of every app-operator kind and the
// engine they share.
package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options configure the controllers.
type Options struct {
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
}

// NewScheme returns a scheme with the built-in kinds and every app-operator API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(appv1.AddToScheme(s))
	return s
}

// CacheByObject scopes the cache of every child type to the objects the
// operator manages, so it never holds every Deployment or pod of a cluster.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})}
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: managed,
		&corev1.Service{}:    managed,
	}
}

// SetupWithManager registers every controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	for _, setup := range []func(ctrl.Manager, clock.PassiveClock) error{
		appServiceKind().setup,
		webServiceKind().setup,
	} {
		if err := setup(mgr, clk); err != nil {
			return err
		}
	}
	return nil
}
