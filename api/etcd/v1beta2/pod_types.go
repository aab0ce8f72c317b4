package v1beta2

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/api/placement"
)

// PodPolicy is the policy of the member pods, at the place of the etcd
// operator's own: spec.pod.nodeSelector, spec.pod.tolerations,
// spec.pod.spread, spec.pod.resources, spec.pod.labels,
// spec.pod.annotations and spec.pod.priorityClassName.
type PodPolicy struct {
	// Placement: the node selector and tolerations of the member pods,
	// and how they spread over the nodes.
	placement.Placement `json:",inline"`

	// Resources are the etcd container's requests and limits. Left out,
	// requests and limits are both 150m CPU and 256Mi of memory (the pods
	// are Guaranteed), enough for a small cluster; a busy one needs more.
	// A change reaches a member when its pod restarts.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.requests) || !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="spec.pod.resources.requests must not exceed spec.pod.resources.limits (cpu, memory, ephemeral-storage)"
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Labels are added to the member pods. The keys the operator sets
	// are refused: app.kubernetes.io/name, app.kubernetes.io/instance and
	// app.kubernetes.io/managed-by (its selector), those under
	// app-operator/, and those the StatefulSet controller sets.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.pod.labels keys must be label keys: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'controller-revision-hash']) && !k.startsWith('app-operator/') && !k.startsWith('statefulset.kubernetes.io/') && !k.startsWith('apps.kubernetes.io/'))",messageExpression="'spec.pod.labels: ' + self.filter(k, k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by', 'controller-revision-hash'] || k.startsWith('app-operator/') || k.startsWith('statefulset.kubernetes.io/') || k.startsWith('apps.kubernetes.io/'))[0] + ' is set by the operator or the StatefulSet controller'"
	Labels map[string]placement.LabelValue `json:"labels,omitempty"`

	// Annotations are added to the member pods. Keys under app-operator/
	// are the operator's and are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.pod.annotations keys must be annotation keys: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('app-operator/'))",messageExpression="'spec.pod.annotations: ' + self.filter(k, k.startsWith('app-operator/'))[0] + ' is set by the operator'"
	Annotations map[string]string `json:"annotations,omitempty"`

	// PriorityClassName is the member pods' PriorityClass.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	PriorityClassName string `json:"priorityClassName,omitempty"`
}
