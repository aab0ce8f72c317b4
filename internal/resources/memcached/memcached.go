// Package memcached builds the children of a Memcached: a Deployment of
// memcached servers, a headless Service through which clients find every
// server, and a PodDisruptionBudget when there is more than one server.
package memcached

import (
	"cmp"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

const (
	// KindName is the value of app.kubernetes.io/name on every child and pod.
	KindName = "memcached"
	// ContainerName names the memcached container.
	ContainerName = "memcached"
	// PortName and Port are memcached's port, on the container and the Service.
	PortName = "memcache"
	Port     = 11211
	// userID is the memcache user and group of the official image.
	userID = 11211
)

// Children are the objects a Memcached owns.
type Children struct {
	Service    *corev1ac.ServiceApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
	// PodDisruptionBudget is nil when size is 1 or less: a budget over a
	// single pod would block every node drain.
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// Objects returns the children in the order they are applied.
func (c Children) Objects() []runtime.ApplyConfiguration {
	objs := []runtime.ApplyConfiguration{c.Service, c.Deployment}
	if c.PodDisruptionBudget != nil {
		objs = append(objs, c.PodDisruptionBudget)
	}
	return objs
}

// Build returns the desired children of the Memcached owner with the given
// spec and the operator's defaults. Every child is named after the owner.
func Build(owner resources.Owner, spec *cachev1alpha1.MemcachedSpec, defaults resources.Defaults) Children {
	selector := Selector(owner.Name)
	labels := resources.Labels(selector)
	c := Children{
		Service:    service(owner, selector, labels),
		Deployment: deployment(owner, spec, defaults, selector, labels),
	}
	if spec.Size > 1 {
		c.PodDisruptionBudget = podDisruptionBudget(owner, selector, labels)
	}
	return c
}

// Selector is the fixed pod selector of the Memcached called name: the kind
// and the instance, so two Memcached resources never share pods.
func Selector(name string) map[string]string {
	return resources.Selector(KindName, name, nil)
}

// Resources returns the container's resources: spec.resources, or the
// defaults when it is left out.
func Resources(spec *cachev1alpha1.MemcachedSpec) corev1.ResourceRequirements {
	if spec.Resources != nil {
		return *spec.Resources
	}
	mem := resource.MustParse(cachev1alpha1.DefaultMemory)
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cachev1alpha1.DefaultCPURequest), corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
	}
}

// Memory headroom: what the container needs beyond memcached's cache (its
// hash table, connection buffers, threads), so that a full cache is not
// OOM-killed. A fifth of the container's memory, at least 32 MiB, or half
// of a container smaller than 64 MiB.
const (
	headroomMiB   = 32
	headroomShare = 5 // 1/headroomShare of the memory
)

// CacheMegabytes is memcached's cache size (-m, in megabytes) for the
// container's resources: the memory limit, or without one the memory
// request, less the headroom. ok is false when neither is set: memcached
// then keeps its own default (64 MB).
func CacheMegabytes(res corev1.ResourceRequirements) (mb int64, ok bool) {
	mem, found := res.Limits[corev1.ResourceMemory]
	if !found {
		mem, found = res.Requests[corev1.ResourceMemory]
	}
	if !found {
		return 0, false
	}
	mib := mem.Value() / (1 << 20)
	headroom := max(mib/headroomShare, min(headroomMiB, mib/2))
	return max(mib-headroom, 1), true
}

func deployment(owner resources.Owner, spec *cachev1alpha1.MemcachedSpec, defaults resources.Defaults, selector, labels map[string]string) *appsv1ac.DeploymentApplyConfiguration {
	image := cmp.Or(spec.Image, cachev1alpha1.DefaultImage)
	res := Resources(spec)
	args := []string{"-p", strconv.Itoa(Port)}
	if mb, ok := CacheMegabytes(res); ok {
		args = append(args, "-m", strconv.FormatInt(mb, 10))
	}
	podSecurity, containerSecurity := resources.SecurityContexts(spec.Settings, defaults)
	if spec.PodSecurityContext == nil {
		// The image's user, by number: the image names it (memcache), and
		// the kubelet can check runAsNonRoot only against a number.
		podSecurity.WithRunAsUser(userID).WithRunAsGroup(userID)
	}
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(PortName)))
	}
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		// The image's entrypoint runs memcached with arguments that start with '-'.
		WithArgs(args...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(Port).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(probe()).
		WithLivenessProbe(probe()).
		WithSecurityContext(containerSecurity)
	if len(res.Limits) > 0 || len(res.Requests) > 0 || len(res.Claims) > 0 {
		container.WithResources(resources.Convert[corev1ac.ResourceRequirementsApplyConfiguration](res))
	}

	// Spread the servers across nodes, so that losing a node loses as
	// little of the cache as it can. As a preference the constraint keeps
	// the form it had before spec.spread existed (no matchLabelKeys), so
	// that the servers of an existing Memcached are not restarted, their
	// caches emptied, by an upgrade of the operator: a preference never
	// holds back the pods of a rolling update anyway.
	spread := resources.DeploymentSpread(spec.Spread, selector)
	if !spec.Spread.IsRequired() {
		spread.MatchLabelKeys = nil
	}
	podSpec := corev1ac.PodSpec().
		WithContainers(container).
		// memcached never talks to the API server.
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(podSecurity).
		WithTopologySpreadConstraints(spread)
	resources.Place(podSpec, spec.Placement)

	return appsv1ac.Deployment(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(spec.Size).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(podSpec)))
}

// service is headless: its DNS name resolves to every ready pod, which is
// how memcached clients, which hash keys across all servers, find them.
func service(owner resources.Owner, selector, labels map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName(PortName).
				WithPort(Port).
				WithProtocol(corev1.ProtocolTCP).
				WithTargetPort(intstr.FromString(PortName))))
}

// podDisruptionBudget lets voluntary disruptions (node drains) take one
// server at a time, so the cache empties one shard at a time.
func podDisruptionBudget(owner resources.Owner, selector, labels map[string]string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(owner.Name, owner.Namespace).
		WithLabels(labels).
		WithOwnerReferences(owner.Reference()).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			// A pod that is not ready serves nothing: draining it must not
			// wait for it.
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}
