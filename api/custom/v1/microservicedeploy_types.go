package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/podsecurity"
)

// MicroServiceDeploySpec is the desired state of one instance of a
// microservice. The fields up to idle are those of the original tutorial;
// the rest are optional additions.
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !self.autoscaling || !has(self.replicas) || self.replicas >= 1",message="spec.replicas must be at least 1 when spec.autoscaling is true: it is the HPA's minimum"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscalingMaxReplicas) || !has(self.replicas) || self.autoscalingMaxReplicas >= self.replicas",message="spec.autoscalingMaxReplicas must be at least spec.replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !self.autoscaling || (has(self.resourceRequirements) && ((has(self.resourceRequirements.requests) && 'cpu' in self.resourceRequirements.requests) || (has(self.resourceRequirements.limits) && 'cpu' in self.resourceRequirements.limits)))",message="spec.resourceRequirements.requests.cpu is required when spec.autoscaling is true: the HPA scales on CPU utilization of the request"
// +kubebuilder:validation:XValidation:rule="size(self.msName) + size(self.path) <= 62",message="spec.msName and spec.path together may have at most 62 characters: the instance's host name is <msName>-<path>.<base domain>"
type MicroServiceDeploySpec struct {
	// MsName is the name of the microservice; every instance of one
	// microservice shares it. It names the container, is the
	// app.kubernetes.io/part-of label of every child, and is part of the
	// instance's host name. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=61
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.msName is immutable"
	MsName string `json:"msName"`

	// FullName is the name of this instance. It must equal metadata.name,
	// which names every child. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.fullName is immutable"
	FullName string `json:"fullName"`

	// Version is the instance's version. It becomes the
	// app.kubernetes.io/version label of every child and of the pods, so it
	// must be a label value; a new version rolls the pods.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Version string `json:"version"`

	// Path is the instance's major version, as it appears in its host name
	// <msName>-<path>.<base domain> when the operator exposes it. Of the
	// instances that want one host, in any namespace, only the oldest is
	// exposed; the others report Exposed=False with reason HostConflict.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=61
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Path string `json:"path"`

	// Image is the container image the pods run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^\S(.*\S)?$`
	Image string `json:"image"`

	// Replicas is the number of pods; with autoscaling, the HPA's minimum.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// Autoscaling runs a HorizontalPodAutoscaler on CPU utilization between
	// replicas and autoscalingMaxReplicas. While it is on, the HPA alone
	// sets the Deployment's replica count.
	// +optional
	// +kubebuilder:default=false
	Autoscaling bool `json:"autoscaling,omitempty"`

	// NeedAuth asks that every request to the instance pass tenant
	// authentication. The instance is exposed only when the operator has an
	// external authentication endpoint to enforce it.
	// +optional
	// +kubebuilder:default=false
	NeedAuth bool `json:"needAuth,omitempty"`

	// Config is the instance's runtime configuration. It is stored in a
	// ConfigMap and mounted into the pods as the file
	// /etc/microservice/config; a change rolls the pods. ConfigMaps are not
	// secret: put credentials in a Secret and name it in configSecretName.
	// +optional
	// +kubebuilder:validation:MaxLength=262000
	Config string `json:"config,omitempty"`

	// CreationTimestamp is the time the instance was created, in
	// milliseconds since the Unix epoch, as the publishing system records it.
	// The operator keeps it as given and does not act on it.
	// +optional
	// +kubebuilder:validation:MaxLength=19
	// +kubebuilder:validation:Pattern=`^[0-9]+$`
	CreationTimestamp string `json:"creationTimestamp,omitempty"`

	// ResourceRequirements are the container's requests and limits. They
	// also size the namespace's ResourceQuota.
	// +optional
	ResourceRequirements ResourceRequirements `json:"resourceRequirements,omitempty"`

	// Idle parks the instance: no pods and no HPA, while its Service,
	// ConfigMap, ServiceAccount and Ingress stay. Turning it off restores
	// the instance as the rest of the spec says.
	// +optional
	// +kubebuilder:default=false
	Idle bool `json:"idle,omitempty"`

	// AutoscalingMaxReplicas is the HPA's maximum; twice replicas when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	AutoscalingMaxReplicas *int32 `json:"autoscalingMaxReplicas,omitempty"`

	// AutoscalingTargetCPUUtilization is the average CPU use, in percent of
	// the CPU request, that the HPA keeps the pods at; 80 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	AutoscalingTargetCPUUtilization *int32 `json:"autoscalingTargetCPUUtilization,omitempty"`

	// ConfigSecretName names a Secret in the instance's namespace whose keys
	// are mounted read-only as files under /etc/microservice/secret/. This is
	// where credentials belong. The operator never reads the Secret; the
	// pods wait until it exists.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ConfigSecretName string `json:"configSecretName,omitempty"`

	// Port is the container port the microservice listens on (named http).
	// The Service forwards its port 80 to it.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// Pod security: the profile (Baseline or Restricted) and optional
	// security contexts that replace the profile's.
	podsecurity.Settings `json:",inline"`

	// Placement: the node selector and tolerations of the pods, and how
	// they spread over the nodes.
	placement.Placement `json:",inline"`
}

// ResourceRequirements are the limits and requests of the container, for
// cpu, memory and ephemeral-storage.
// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || self.requests.all(k, !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="spec.resourceRequirements.requests must not exceed spec.resourceRequirements.limits"
type ResourceRequirements struct {
	// Limits are the most the container may use.
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'])",message="spec.resourceRequirements.limits may only name cpu, memory and ephemeral-storage"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="spec.resourceRequirements.limits must not be negative"
	Limits corev1.ResourceList `json:"limits,omitempty"`

	// Requests are what the container is guaranteed; a missing request
	// defaults to its limit.
	// +optional
	// +kubebuilder:validation:MaxProperties=3
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'])",message="spec.resourceRequirements.requests may only name cpu, memory and ephemeral-storage"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="spec.resourceRequirements.requests must not be negative"
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// MicroServiceDeployStatus is the observed state. The replica counts sit at
// the same paths as a Deployment's status.
type MicroServiceDeployStatus struct {
	// Replicas is the number of pods, of any version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas is the number of pods ready for minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UpdatedReplicas is the number of pods of the current version.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// UnavailableReplicas is the number of pods still missing for the
	// Deployment to be fully available.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`
	// URL is where the instance is reachable when the operator exposes it
	// through an Ingress; empty otherwise.
	// +optional
	URL string `json:"url,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded, Idle, Exposed and QuotaReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MicroServiceDeploy runs one instance of a microservice: its Deployment,
// Service, ServiceAccount, ConfigMap, HPA and, when the operator has a base
// domain, Ingress; the namespace's ResourceQuota counts it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=msd,categories=all
// +kubebuilder:printcolumn:name="MsName",type=string,JSONPath=`.spec.msName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Idle",type=boolean,JSONPath=`.spec.idle`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,priority=1
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
// +kubebuilder:validation:XValidation:rule="self.spec.fullName == self.metadata.name",message="spec.fullName must equal metadata.name: both name the instance"
type MicroServiceDeploy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   MicroServiceDeploySpec   `json:"spec"`
	Status MicroServiceDeployStatus `json:"status,omitempty"`
}

// MicroServiceDeployList is a list of MicroServiceDeploy.
// +kubebuilder:object:root=true
type MicroServiceDeployList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MicroServiceDeploy `json:"items"`
}

// GetConditions returns the status conditions.
func (m *MicroServiceDeploy) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces status.conditions.
func (m *MicroServiceDeploy) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }
