// Package controller holds the reconcilers of every app-operator kind and the
// engine they share.
package controller

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/memcached"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
)

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options configure the controllers.
type Options struct {
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// Recheck is how often a resource blocked by something the operator
	// does not watch (a child it does not control, an admission check that
	// refused a child) looks again; DefaultRecheck when zero.
	Recheck time.Duration
	// Defaults are the operator-wide settings of every builder.
	Defaults resources.Defaults
	// MicroServiceDeploy are the operator-wide settings of that kind: how
	// it exposes instances.
	MicroServiceDeploy microservicedeploy.Options
	// Settle is how long a status write waits for a silent Deployment
	// controller to observe a changed Deployment (see DefaultSettle);
	// DefaultSettle when zero.
	Settle time.Duration
	// MaxConcurrentReconciles is how many resources of one kind are
	// reconciled at once (each kind has its own workers); 1 when zero.
	MaxConcurrentReconciles int
}

// NewScheme returns a scheme with the built-in kinds and every app-operator API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(appv1.AddToScheme(s))
	utilruntime.Must(customv1.AddToScheme(s))
	utilruntime.Must(cachev1alpha1.AddToScheme(s))
	utilruntime.Must(operatorv1.AddToScheme(s))
	return s
}

// CacheByObject scopes the cache of every child type to the objects the
// operator manages, so it never holds every Deployment or pod of a cluster.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy})}
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:                     managed,
		&corev1.Service{}:                        managed,
		&corev1.ServiceAccount{}:                 managed,
		&corev1.ConfigMap{}:                      managed,
		&autoscalingv2.HorizontalPodAutoscaler{}: managed,
		&networkingv1.Ingress{}:                  managed,
		// Only the MicroServiceDeploy quota, whoever made it: one of that
		// name without the operator's labels must be seen to be left alone.
		&corev1.ResourceQuota{}: {Field: fields.OneTermEqualSelector("metadata.name", microservicedeploy.QuotaName)},
		// Only the PriorityClass of the MicroServiceDeploy pods.
		&schedulingv1.PriorityClass{}:   {Field: fields.OneTermEqualSelector("metadata.name", microservicedeploy.PriorityClassName)},
		&policyv1.PodDisruptionBudget{}: managed,
		// Only the pods of Memcached resources (for status.nodes). They are
		// never applied: their managedFields are dropped to save memory.
		&corev1.Pod{}: {
			Label: labels.SelectorFromSet(labels.Set{
				resources.LabelManagedBy: resources.ManagedBy,
				resources.LabelName:      memcached.KindName,
			}),
			Transform: cache.TransformStripManagedFields(),
		},
	}
}

// kinds lists every kind the operator serves.
func kinds(opts Options) []registered {
	return []registered{
		appServiceKind(opts),
		webServiceKind(opts),
		microServiceDeployKind(opts),
		memcachedKind(opts),
		myWebKind(opts),
	}
}

// SetupWithManager registers every controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	env := settings{clock: opts.Clock, recheck: opts.Recheck, settle: opts.Settle, workers: opts.MaxConcurrentReconciles}
	if env.clock == nil {
		env.clock = clock.RealClock{}
	}
	if env.recheck <= 0 {
		env.recheck = DefaultRecheck
	}
	if env.settle <= 0 {
		env.settle = DefaultSettle
	}
	if err := opts.MicroServiceDeploy.Validate(); err != nil {
		return fmt.Errorf("MicroServiceDeploy options: %w", err)
	}
	ks := kinds(opts)
	if err := indexByController(mgr, ks); err != nil {
		return err
	}
	for _, k := range ks {
		if err := k.setup(mgr, env); err != nil {
			return err
		}
	}
	return setupNamespaceQuota(mgr)
}

// controllerIndex is the cache index of the owned types by the uid of
// their controller: a pass finds the children of its resource (see prune)
// without looking at every child in the namespace.
const controllerIndex = "app-operator/controller-uid"

// indexByController registers controllerIndex once for every type a kind
// owns.
func indexByController(mgr ctrl.Manager, ks []registered) error {
	indexed := map[reflect.Type]bool{}
	for _, k := range ks {
		for _, o := range k.ownedTypes() {
			t := reflect.TypeOf(o)
			if indexed[t] {
				continue
			}
			indexed[t] = true
			if err := mgr.GetFieldIndexer().IndexField(context.Background(), o, controllerIndex, func(o client.Object) []string {
				if ref := metav1.GetControllerOf(o); ref != nil {
					return []string{string(ref.UID)}
				}
				return nil
			}); err != nil {
				return fmt.Errorf("index %T by controller: %w", o, err)
			}
		}
	}
	return nil
}

// Build returns the children the operator would apply for obj, in order,
// without a cluster: the builders are pure.
func Build(obj runtime.Object, opts Options) ([]runtime.ApplyConfiguration, error) {
	for _, k := range kinds(opts) {
		if acs, ok, err := k.buildAny(obj); ok {
			return acs, err
		}
	}
	return nil, fmt.Errorf("%T is not a kind app-operator serves", obj)
}
