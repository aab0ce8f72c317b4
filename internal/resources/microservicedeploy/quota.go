package microservicedeploy

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

// QuotaName is the name of the one ResourceQuota the operator keeps in each
// namespace that holds MicroServiceDeploys.
const QuotaName = "microservicedeploy-quota"

// quotaResources are the resources the quota can limit: those
// spec.resourceRequirements may name.
var quotaResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// Instance is one MicroServiceDeploy, as the namespace's quota counts it.
type Instance struct {
	Owner resources.Owner
	Spec  *customv1.MicroServiceDeploySpec
}

// Pods is the most pods an instance runs at once: its maximum replicas plus
// the surge of a rolling update at that size. An idle instance runs none.
func Pods(spec *customv1.MicroServiceDeploySpec) int64 {
	n := MaxReplicas(spec)
	return int64(n) + int64(Surge(n))
}

// QuotaHard is the quota that lets every instance run at its maximum,
// rolling update included: for each resource, the per-pod request (or, when
// unset, the limit, as the API server defaults it) and limit times Pods,
// summed over the instances.
//
// A quota on a resource makes the API server reject every pod of the
// namespace that does not declare that resource, so a resource enters the
// quota only when every instance declares it.
func QuotaHard(instances []Instance) corev1.ResourceList {
	hard := corev1.ResourceList{}
	if len(instances) == 0 {
		return hard
	}
	for _, name := range quotaResources {
		var requests, limits resource.Quantity
		allRequest, allLimit := true, true
		for _, in := range instances {
			rr := in.Spec.ResourceRequirements
			pods := Pods(in.Spec)
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
			hard[corev1.ResourceName("requests."+name)] = canonical(requests)
		}
		if allLimit {
			hard[corev1.ResourceName("limits."+name)] = canonical(limits)
		}
	}
	return hard
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

// Quota returns the namespace's ResourceQuota for the instances in it. The
// quota carries an owner reference to each instance, none of them the
// controller: the garbage collector deletes it with the last one.
func Quota(namespace string, instances []Instance) *corev1ac.ResourceQuotaApplyConfiguration {
	sorted := append([]Instance(nil), instances...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Owner.Name < sorted[j].Owner.Name })
	q := corev1ac.ResourceQuota(QuotaName, namespace).
		WithLabels(QuotaLabels()).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(QuotaHard(sorted)))
	for _, in := range sorted {
		q.WithOwnerReferences(in.Owner.SharedReference())
	}
	return q
}

// QuotaLabels mark the quota as the operator's. A ResourceQuota named
// QuotaName without them is someone else's, and the operator leaves it alone.
func QuotaLabels() map[string]string {
	return map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelName: KindName}
}

// IsOperatorQuota reports whether labels mark a quota as the operator's.
func IsOperatorQuota(labels map[string]string) bool {
	for k, v := range QuotaLabels() {
		if labels[k] != v {
			return false
		}
	}
	return true
}
