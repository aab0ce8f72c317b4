package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

func nodePortService(svcType corev1.ServiceType, nodePorts ...int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: svcType}}
	for _, np := range nodePorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: 80, NodePort: np})
	}
	return svc
}

func TestMyWebStatus(t *testing.T) {
	available := deployment(1, 3, 1, 1, 1)
	type result struct {
		Completed          bool
		ObservedGeneration int64
		Ready              metav1.ConditionStatus
		Reason             string
		Degraded           metav1.ConditionStatus
	}
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		svc     *corev1.Service
		failure *conditions.Failure
		want    result
	}{
		{"should be completed when the Deployment is available and the Service exposes the node port",
			available, nodePortService(corev1.ServiceTypeNodePort, 30100), nil,
			result{true, 5, metav1.ConditionTrue, conditions.ReasonAvailable, metav1.ConditionFalse}},
		{"should accept a LoadBalancer Service that exposes the node port",
			available, nodePortService(corev1.ServiceTypeLoadBalancer, 30100), nil,
			result{true, 5, metav1.ConditionTrue, conditions.ReasonAvailable, metav1.ConditionFalse}},
		{"should not be completed while the Deployment does not exist",
			nil, nodePortService(corev1.ServiceTypeNodePort, 30100), nil,
			result{false, 5, metav1.ConditionFalse, conditions.ReasonRolloutInProgress, metav1.ConditionFalse}},
		{"should not be completed while a change rolls out",
			deployment(1, 2, 1, 1, 1), nodePortService(corev1.ServiceTypeNodePort, 30100), nil,
			result{false, 5, metav1.ConditionFalse, conditions.ReasonRolloutInProgress, metav1.ConditionFalse}},
		{"should not be completed while the new pod is not available",
			deployment(1, 3, 2, 1, 1), nodePortService(corev1.ServiceTypeNodePort, 30100), nil,
			result{false, 5, metav1.ConditionFalse, conditions.ReasonRolloutInProgress, metav1.ConditionFalse}},
		{"should not be completed when the Service exposes another node port",
			available, nodePortService(corev1.ServiceTypeNodePort, 30200), nil,
			result{false, 4, metav1.ConditionFalse, conditions.ReasonNodePortNotExposed, metav1.ConditionTrue}},
		{"should not be completed when the Service is not of type NodePort",
			available, nodePortService(corev1.ServiceTypeClusterIP), nil,
			result{false, 4, metav1.ConditionFalse, conditions.ReasonNodePortNotExposed, metav1.ConditionTrue}},
		{"should not be completed without a Service",
			available, nil, nil,
			result{false, 4, metav1.ConditionFalse, conditions.ReasonNodePortNotExposed, metav1.ConditionTrue}},
		{"should report a node port taken by another Service over the live children",
			available, nodePortService(corev1.ServiceTypeNodePort, 30100),
			&conditions.Failure{Reason: conditions.ReasonNodePortAllocated, Message: "apply Service web: provided port is already allocated"},
			result{false, 4, metav1.ConditionFalse, conditions.ReasonNodePortAllocated, metav1.ConditionTrue}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := operatorv1.MyWebStatus{Completed: true, ObservedGeneration: 4}
			MyWeb(&st, 5, 30100, tt.d, tt.svc, tt.failure, metav1.Now())
			got := result{
				Completed:          st.Completed,
				ObservedGeneration: st.ObservedGeneration,
				Ready:              find(t, st.Conditions, conditions.Ready).Status,
				Reason:             find(t, st.Conditions, conditions.Ready).Reason,
				Degraded:           find(t, st.Conditions, conditions.Degraded).Status,
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 5 {
					t.Errorf("%s has observedGeneration %d, want 5", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}

func TestMyWebCompletedFollowsARollout(t *testing.T) {
	svc := nodePortService(corev1.ServiceTypeNodePort, 30100)
	var st operatorv1.MyWebStatus
	steps := []struct {
		name string
		gen  int64
		d    *appsv1.Deployment
		want bool
	}{
		{"created", 1, deployment(1, 2, 1, 1, 1), false},
		{"available", 1, deployment(1, 3, 1, 1, 1), true},
		{"the page changed: the Deployment controller has not seen it", 2, deployment(1, 2, 1, 1, 1), false},
		{"the new pod is starting", 2, deployment(1, 3, 2, 1, 1), false},
		{"the new pod is available", 2, deployment(1, 3, 1, 1, 1), true},
	}
	for _, s := range steps {
		MyWeb(&st, s.gen, 30100, s.d, svc, nil, metav1.Now())
		if st.Completed != s.want {
			t.Errorf("%s: completed = %v, want %v", s.name, st.Completed, s.want)
		}
	}
}
