// Package controller holds the reconcilers of every app-operator kind and the
// engine they share.
package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
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
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
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
// operator manages, so it never holds every Deployment or pod of a cluster,
// and drops from the children and the resources the managedFields entries
// of their status (see dropStatusManagedFields).
func CacheByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{
		Label:     labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy}),
		Transform: dropStatusManagedFields,
	}
	named := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name), Transform: dropStatusManagedFields}
	}
	// The resources themselves, every one: the operator writes their
	// status as a merge patch from the cached copy and never reads who
	// owns it.
	resource := cache.ByObject{Transform: dropStatusManagedFields}
	return map[client.Object]cache.ByObject{
		&appv1.AppService{}:            resource,
		&appv1.WebService{}:            resource,
		&customv1.MicroServiceDeploy{}: resource,
		&cachev1alpha1.Memcached{}:     resource,
		&operatorv1.MyWeb{}:            resource,

		&appsv1.Deployment{}:                     managed,
		&corev1.Service{}:                        managed,
		&corev1.ServiceAccount{}:                 managed,
		&corev1.ConfigMap{}:                      managed,
		&autoscalingv2.HorizontalPodAutoscaler{}: managed,
		&networkingv1.Ingress{}:                  managed,
		// Only the MicroServiceDeploy quota, whoever made it: one of that
		// name without the operator's labels must be seen to be left alone.
		&corev1.ResourceQuota{}: named(microservicedeploy.QuotaName),
		// Only the PriorityClass of the MicroServiceDeploy pods.
		&schedulingv1.PriorityClass{}:   named(microservicedeploy.PriorityClassName),
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

// dropStatusManagedFields is the cache transform of the children and the
// resources: it drops the managedFields entries of their status
// subresource. The controllers that report on a child own its status (the
// Deployment controller's entry lists every field of every condition),
// which the operator never applies and whose ownership it never reads: it
// reads its own apply entry (upToDate, matchOf) and who owns the fields it
// hands over, such as the replicas an HPA sets through the scale
// subresource (handoverNeeded). A resource's status entry is the
// operator's own.
func dropStatusManagedFields(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	mf := o.GetManagedFields()
	if !slices.ContainsFunc(mf, isStatusEntry) {
		return obj, nil
	}
	kept := make([]metav1.ManagedFieldsEntry, 0, len(mf)-1)
	for _, e := range mf {
		if !isStatusEntry(e) {
			kept = append(kept, e)
		}
	}
	o.SetManagedFields(kept)
	return o, nil
}

func isStatusEntry(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" }

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
	if err := indexByController(mgr.GetCache(), ks); err != nil {
		return err
	}
	for _, k := range ks {
		if err := k.setup(mgr, env); err != nil {
			return err
		}
	}
	return setupNamespaceQuota(mgr)
}

// controllerIndex is the cache index of the owned types by their
// controller: a pass finds the children of its resource (see prune)
// without looking at every child in the namespace. The value is not the
// controller's uid but its first character (controllerBucket), within the
// child's namespace: sixteen values per namespace, each holding about a
// sixteenth of the namespace's children, which prune filters by
// controller. A value per controller would cost a set per child, about
// 370 bytes, against about 60 for a key in one of sixteen sets.
const controllerIndex = "app-operator/controller-uid-bucket"

// controllerBucket is the value of controllerIndex for children of the
// controller uid: the first character of a uid the API server generates,
// one of sixteen hexadecimal digits.
func controllerBucket(uid types.UID) string {
	if uid == "" {
		return ""
	}
	return string(uid[:1])
}

// indexByController registers controllerIndex once for every type a kind
// owns, on the type's informer. The manager's field indexer would store
// each value twice, for the child's namespace and for all namespaces, and
// a pass only ever asks within its resource's namespace: one entry per
// child, under the key the cache looks a field up by in a namespace
// (fieldIndexName, namespacedIndexValue), holds half as much.
func indexByController(c cache.Cache, ks []registered) error {
	indexed := map[reflect.Type]bool{}
	for _, k := range ks {
		for _, o := range k.ownedTypes() {
			t := reflect.TypeOf(o)
			if indexed[t] {
				continue
			}
			indexed[t] = true
			inf, err := c.GetInformer(context.Background(), o, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("informer of %T: %w", o, err)
			}
			if err := inf.AddIndexers(toolscache.Indexers{fieldIndexName(controllerIndex): controllerInNamespace}); err != nil {
				return fmt.Errorf("index %T by controller: %w", o, err)
			}
		}
	}
	return nil
}

// controllerInNamespace is the index function of controllerIndex: the
// bucket of obj's controller, within obj's namespace.
func controllerInNamespace(obj any) ([]string, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.UID == "" || o.GetNamespace() == "" {
		return nil, nil
	}
	return []string{namespacedIndexValue(o.GetNamespace(), controllerBucket(ref.UID))}, nil
}

// fieldIndexName and namespacedIndexValue are the index name and value
// under which the cache's List finds, within a namespace, the objects a
// field selector on an indexed field matches (client.MatchingFields with
// client.InNamespace), as the manager's field indexer stores them.
func fieldIndexName(field string) string { return "field:" + field }

func namespacedIndexValue(namespace, value string) string { return namespace + "/" + value }

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
