package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/podsecurity"
)

// The defaults of the optional fields. The CRD carries the same values (see
// the markers below), so a stored Memcached shows them; the builder falls
// back to them too, for a resource that never went through the API server
// (the offline preview).
const (
	// DefaultImage is a pinned memcached release, the official image.
	DefaultImage = "memcached:1.6.45-alpine"
	// DefaultCPURequest and DefaultMemory are the container's resources
	// when spec.resources is left out: a memory limit gives memcached a
	// cache size (see internal/resources/memcached.CacheMegabytes).
	DefaultCPURequest = "100m"
	DefaultMemory     = "128Mi"
	// MaxSize is the largest spec.size accepted. More memcached servers
	// than that belong in several pools, not in one resource.
	MaxSize = 256
)

// MemcachedSpec is the desired state of a Memcached: `size` memcached
// servers behind a headless Service.
type MemcachedSpec struct {
	// Size is the size of the memcached deployment: the number of memcached
	// pods. The /scale subresource works on it (kubectl scale).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=256
	Size int32 `json:"size"`

	// Image is the memcached container image.
	// +optional
	// +kubebuilder:default="memcached:1.6.45-alpine"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image,omitempty"`

	// Resources are the memcached container's requests and limits. The
	// memory limit (or, without one, the memory request) sets memcached's
	// cache size (-m), kept below it so that the pod is not OOM-killed.
	// +optional
	// +kubebuilder:default={requests:{cpu:"100m",memory:"128Mi"},limits:{memory:"128Mi"}}
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.requests) || !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="spec.resources.requests must not exceed spec.resources.limits (cpu, memory, ephemeral-storage)"
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Pod security: the profile (Baseline or Restricted) and optional
	// security contexts that replace the profile's.
	podsecurity.Settings `json:",inline"`

	// Placement: the node selector and tolerations of the pods, and how
	// they spread over the nodes.
	placement.Placement `json:",inline"`
}

// MemcachedStatus is the observed state.
type MemcachedStatus struct {
	// Nodes are the names of the memcached pods, sorted: every pod of this
	// resource that is not being deleted and has not terminated, whether
	// or not it is ready yet (readyReplicas counts the ready ones).
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// Replicas is the number of pods the Deployment has, of any version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Selector selects the pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Memcached runs a memcached cluster: a Deployment of `size` pods, a
// headless Service through which clients find every pod, and a
// PodDisruptionBudget when there is more than one pod.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=all
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
type Memcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   MemcachedSpec   `json:"spec"`
	Status MemcachedStatus `json:"status,omitempty"`
}

// MemcachedList is a list of Memcached.
// +kubebuilder:object:root=true
type MemcachedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Memcached `json:"items"`
}

// GetConditions returns the status conditions.
func (m *Memcached) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces status.conditions.
func (m *Memcached) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }
