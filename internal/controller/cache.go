package controller

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/kinds"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
)

// CacheByObject scopes the cache of every child type to the objects the
// operator manages, so it never holds every Deployment or pod of a cluster,
// transforms the children (see transformChild), and drops from the
// resources all their managedFields.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{
		Label:     labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy}),
		Transform: transformChild,
	}
	named := func(name string) cache.ByObject {
		return cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", name), Transform: transformChild}
	}
	// The resources themselves, every one: the operator writes their
	// status as a merge patch from the cached copy and never reads who
	// owns any of their fields.
	resource := cache.ByObject{Transform: cache.TransformStripManagedFields()}
	byObject := map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:  managed,
		&appsv1.StatefulSet{}: managed,
		// Only the Jobs of the EtcdBackups.
		&batchv1.Job{}: managed,
		// Only the Secrets the operator labels: a RedisEnterpriseCluster's
		// credentials, the certificates it issues. The TLS Secrets a
		// user names are read without the cache, at each pass of their
		// cluster.
		&corev1.Secret{}:         managed,
		&corev1.Service{}:        managed,
		&corev1.ServiceAccount{}: managed,
		&corev1.ConfigMap{}:      managed,
		// The Roles and RoleBindings of the RedisEnterpriseCluster consoles.
		&rbacv1.Role{}:        managed,
		&rbacv1.RoleBinding{}: managed,
		// Only the claims of the operator's StatefulSets.
		&corev1.PersistentVolumeClaim{}:          managed,
		&autoscalingv2.HorizontalPodAutoscaler{}: managed,
		&networkingv1.Ingress{}:                  managed,
		// Only the MicroServiceDeploy quota, whoever made it: one of that
		// name without the operator's labels must be seen to be left alone.
		&corev1.ResourceQuota{}: named(microservicedeploy.QuotaName),
		// Only the PriorityClass of the MicroServiceDeploy pods.
		&schedulingv1.PriorityClass{}:   named(microservicedeploy.PriorityClassName),
		&policyv1.PodDisruptionBudget{}: managed,
		// Only the pods of the operator's workloads (for status.nodes and
		// what keeps pods from running). They are never applied: their
		// managedFields are dropped to save memory.
		&corev1.Pod{}: {
			Label:     labels.SelectorFromSet(labels.Set{resources.LabelManagedBy: resources.ManagedBy}),
			Transform: transformPod,
		},
	}
	// Every node, each kept as its name and whether it is cordoned.
	byObject[&corev1.Node{}] = cache.ByObject{Transform: transformNode}
	for _, k := range kinds.All() {
		byObject[k.New()] = resource
	}
	return byObject
}

// transformChild is the cache transform of the children: it drops the
// managedFields entries of their status and shares the strings their
// metadata repeats (internedMeta).
func transformChild(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		dropStatusManagedFields(o)
		metaStrings.apply(o)
	}
	return obj, nil
}

// transformPod is the cache transform of the pods: it drops all their
// managedFields and shares the strings their metadata repeats.
func transformPod(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if o, ok := obj.(client.Object); ok && err == nil {
		metaStrings.apply(o)
	}
	return obj, err
}

var stripManagedFields = cache.TransformStripManagedFields()

// dropStatusManagedFields drops the managedFields entries of o's status
// subresource. The controllers that report on a child own its status (the Deployment
// controller's entry lists every field of every condition), which the
// operator never applies and whose ownership it never reads: it reads its
// own apply entry (upToDate, matchOf) and who owns the fields it hands
// over, such as the replicas an HPA sets through the scale subresource
// (handoverNeeded).
func dropStatusManagedFields(o client.Object) {
	mf := o.GetManagedFields()
	if !slices.ContainsFunc(mf, isStatusEntry) {
		return
	}
	kept := make([]metav1.ManagedFieldsEntry, 0, len(mf)-1)
	for _, e := range mf {
		if !isStatusEntry(e) {
			kept = append(kept, e)
		}
	}
	o.SetManagedFields(kept)
}

func isStatusEntry(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" }
