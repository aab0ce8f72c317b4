package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

// MyWeb sets the status of a MyWeb from its Deployment d and Service svc (nil
// when missing), the node port its spec asks for, and the pass's failure (nil
// on success). Completed is true exactly when Ready is: the Deployment is
// available for the current generation and the Service exposes the node port.
// observedGeneration moves only after a successful pass.
func MyWeb(st *operatorv1.MyWebStatus, generation int64, nodePort int32, d *appsv1.Deployment, svc *corev1.Service, failure *conditions.Failure, now metav1.Time) {
	if failure == nil && !ExposesNodePort(svc, nodePort) {
		failure = &conditions.Failure{Reason: conditions.ReasonNodePortNotExposed, Message: fmt.Sprintf("The Service does not expose node port %d", nodePort)}
	}
	w := SetWorkloadConditions(&st.Conditions, generation, d, failure, now)
	st.Completed = w.Ready
	if failure == nil {
		st.ObservedGeneration = generation
	}
}

// ExposesNodePort reports whether svc opens nodePort on every node.
func ExposesNodePort(svc *corev1.Service, nodePort int32) bool {
	if svc == nil || (svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer) {
		return false
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort == nodePort {
			return true
		}
	}
	return false
}
