package microservicedeploy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	schedulingv1ac "k8s.io/client-go/applyconfigurations/scheduling/v1"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

// QuotaName is the name of the one ResourceQuota the operator keeps in each
// namespace that holds MicroServiceDeploys.
const QuotaName = "microservicedeploy-quota"

// PriorityClassName is the PriorityClass of every MicroServiceDeploy pod.
// The namespace's quota is scoped to it, so that it limits those pods and
// never the namespace's other pods.
const PriorityClassName = "app-operator-microservicedeploy"

// quotaResources are the resources the quota can limit: those
// spec.resourceRequirements may name.
var quotaResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// Pods is the most pods of an instance the quota may count at once: its
// maximum replicas plus the surge of a rolling update at that size, plus
// as many pods again still terminating, since the quota counts a deleted
// pod until its grace period ends and a rollout may delete every old pod
// before the first has gone. An idle instance runs none.
func Pods(spec *customv1.MicroServiceDeploySpec) int64 {
	n := MaxReplicas(spec)
	return 2*int64(n) + int64(Surge(n))
}

// QuotaHard is the quota that lets every instance run at its maximum,
// rolling update included: for each resource, the per-pod request (or, when
// unset, the limit, as the API server defaults it) and limit times Pods,
// summed over the instances.
//
// A quota on a resource makes the API server reject every pod in its scope
// that does not declare that resource, so a resource enters the quota only
// when every instance declares it.
func QuotaHard(specs []*customv1.MicroServiceDeploySpec) corev1.ResourceList {
	hard := corev1.ResourceList{}
	if len(specs) == 0 {
		return hard
	}
	for _, name := range quotaResources {
		var requests, limits resource.Quantity
		allRequest, allLimit := true, true
		for _, spec := range specs {
			rr := spec.ResourceRequirements
			pods := Pods(spec)
			req, ok := rr.Requests[name]
			if !ok {
				req, ok = rr.Limits[name]
			}
			if ok {
				requests.Add(times(req, pods))
			} else {
				allRequest = false
			}
			if lim, ok := rr.Limits[name]; ok {
				limits.Add(times(lim, pods))
			} else {
				allLimit = false
			}
		}
		if allRequest {
			hard["requests."+name] = canonical(requests)
		}
		if allLimit {
			hard["limits."+name] = canonical(limits)
		}
	}
	return hard
}

// Covers reports whether hard leaves room for every pod of the instance
// with spec: each resource the quota limits is at least what the instance
// alone may use. The quota is the sum over the namespace's instances, so
// an instance it counts is always covered.
func Covers(hard corev1.ResourceList, spec *customv1.MicroServiceDeploySpec) bool {
	for name, need := range QuotaHard([]*customv1.MicroServiceDeploySpec{spec}) {
		if have, ok := hard[name]; ok && have.Cmp(need) < 0 {
			return false
		}
	}
	return true
}

func times(q resource.Quantity, n int64) resource.Quantity {
	out := q.DeepCopy()
	out.Mul(n)
	return out
}

// canonical returns q as the API server stores it, so that a comparison
// with the live quota finds no difference where there is none.
func canonical(q resource.Quantity) resource.Quantity {
	return resource.MustParse(q.String())
}

// RoomForPodsInUse returns hard with, for each resource whose use (the
// quota's status.used) exceeds it, that use added. When a spec asks for
// less, its old pods still count until a rollout replaces them, and a quota
// sized for the new spec alone would refuse the new pods, so that the old
// ones (unschedulable ones, say) would never go. Once they are gone, the
// use falls back under the specs' quota, which is then the quota again.
func RoomForPodsInUse(hard, used corev1.ResourceList) corev1.ResourceList {
	out := hard.DeepCopy()
	for name, limit := range hard {
		if inUse, ok := used[name]; ok && inUse.Cmp(limit) > 0 {
			sum := limit.DeepCopy()
			sum.Add(inUse)
			out[name] = canonical(sum)
		}
	}
	return out
}

// Quota returns the namespace's ResourceQuota for the instances with the
// given specs, scoped to the pods of PriorityClassName, with room for the
// pods in use (used, the live quota's status; see RoomForPodsInUse). It has
// no owner references: one per instance would grow without bound (an object
// is capped at about 1.5 MB, near 10,000 references); the operator deletes
// it with the namespace's last instance.
func Quota(namespace string, specs []*customv1.MicroServiceDeploySpec, used corev1.ResourceList) *corev1ac.ResourceQuotaApplyConfiguration {
	spec := corev1ac.ResourceQuotaSpec().
		WithScopeSelector(corev1ac.ScopeSelector().WithMatchExpressions(
			corev1ac.ScopedResourceSelectorRequirement().
				WithScopeName(corev1.ResourceQuotaScopePriorityClass).
				WithOperator(corev1.ScopeSelectorOpIn).
				WithValues(PriorityClassName)))
	// No limits at all is no hard map: the API server stores an empty one
	// as none, and an applied empty map would never compare equal to it.
	if hard := QuotaHard(specs); len(hard) > 0 {
		spec.WithHard(RoomForPodsInUse(hard, used))
	}
	return corev1ac.ResourceQuota(QuotaName, namespace).WithLabels(labels()).WithSpec(spec)
}

// PriorityClass is the PriorityClass of the instances' pods. Its value is
// that of a pod without one (0), and it never preempts another pod: it
// exists only to scope the quota.
func PriorityClass() *schedulingv1ac.PriorityClassApplyConfiguration {
	return schedulingv1ac.PriorityClass(PriorityClassName).
		WithLabels(labels()).
		WithValue(0).
		// globalDefault is left out: false is its default, and the API
		// server does not store a false it would have to compare against.
		WithPreemptionPolicy(corev1.PreemptNever).
		WithDescription("Pods of MicroServiceDeploy instances; the namespaces' microservicedeploy-quota limits only these pods.")
}

// labels mark the quota and the PriorityClass as the operator's, for
// people and selectors. Whether the operator treats one as its own is
// decided by its field manager, never by labels anyone can copy.
func labels() map[string]string {
	return map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: KindName}
}
