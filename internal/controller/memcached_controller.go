package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/memcached"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=patch
// Setting blockOwnerDeletion on a child needs update on the owner's finalizers
// where OwnerReferencesPermissionEnforcement admission is on.
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// memcachedKind reconciles Memcached: a Deployment, a headless Service and a
// PodDisruptionBudget, with the names of the pods in status.nodes.
func memcachedKind(opts Options) engine.Kind[*cachev1alpha1.Memcached] {
	gvk := cachev1alpha1.GroupVersion.WithKind("Memcached")
	return engine.Kind[*cachev1alpha1.Memcached]{
		Name: "memcached",
		GVK:  gvk,
		New:  func() *cachev1alpha1.Memcached { return &cachev1alpha1.Memcached{} },
		Owns: []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}},
		// A single pod needs no PodDisruptionBudget.
		Prunes: []client.Object{&policyv1.PodDisruptionBudget{}},
		Build: func(o *cachev1alpha1.Memcached, _ engine.Observed) ([]runtime.ApplyConfiguration, error) {
			return memcached.Build(resources.OwnerOf(o, gvk), &o.Spec, opts.Defaults).Objects(), nil
		},
		SetStatus: func(o *cachev1alpha1.Memcached, pass engine.Report, now metav1.Time) {
			children, failure := pass.Children, pass.Failure
			selector := labels.SelectorFromSet(memcached.Selector(o.Name)).String()
			status.Memcached(&o.Status, o.Generation, selector, children.Deployment(o.Name), engine.PodsOf(children), failure, now)
		},
		Watch: func(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			return b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(engine.PodOwner(memcached.KindName)),
				builder.WithPredicates(nodeSetChanges())), nil
		},
	}
}

// nodeSetChanges passes the pod events that can change a status.nodes list:
// a pod created or deleted, starting to terminate or finishing, or
// relabelled. Status updates of running pods (probes, conditions) do not
// wake the controller.
func nodeSetChanges() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
			newPod, ok2 := e.ObjectNew.(*corev1.Pod)
			if !ok1 || !ok2 {
				return true
			}
			return status.IsNode(oldPod) != status.IsNode(newPod) || !equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels)
		},
	}
}
