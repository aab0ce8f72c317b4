package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/podsecurity"
)

// AppServiceSpec is the desired state of an AppService or a WebService: an
// image run as a Deployment of `size` pods, exposed by a Service.
// +kubebuilder:validation:XValidation:rule="self.serviceType != 'ClusterIP' || !has(self.ports) || self.ports.all(p, !has(p.nodePort))",message="spec.ports[].nodePort needs serviceType NodePort or LoadBalancer"
type AppServiceSpec struct {
	// Size is the number of pods.
	// +required
	// +kubebuilder:validation:Minimum=0
	Size *int32 `json:"size"`

	// Image is the container image the pods run.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// Resources are the container's resource requests and limits.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.requests) || !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="spec.resources.requests must not exceed spec.resources.limits (cpu, memory, ephemeral-storage)"
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Envs are the container's environment variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Envs []corev1.EnvVar `json:"envs,omitempty"`

	// Ports are the Service's ports; a Service needs at least one. Each
	// opens its targetPort (or, when unset, its port) on the container.
	// +required
	// +listType=map
	// +listMapKey=port
	// +listMapKey=protocol
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.name) || self.exists_one(q, has(q.name) && q.name == p.name))",message="spec.ports[].name must be unique"
	// +kubebuilder:validation:XValidation:rule="self.size() <= 1 || self.all(p, has(p.name))",message="spec.ports[].name is required when there is more than one port"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.targetPort) || (type(p.targetPort) == int && p.targetPort >= 1 && p.targetPort <= 65535))",message="spec.ports[].targetPort must be a number between 1 and 65535: the container port is derived from it"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.nodePort) || self.exists_one(q, has(q.nodePort) && q.nodePort == p.nodePort))",message="spec.ports[].nodePort must be unique"
	Ports []ServicePort `json:"ports,omitempty"`

	// ServiceType is the type of the Service.
	// +optional
	// +kubebuilder:default=NodePort
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// PodLabels are added to the pods. They never enter the selector, and
	// cannot override the labels the operator selects pods by. Keys and
	// values must be label keys and values.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.podLabels keys must be label keys: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="spec.podLabels values must be label values: at most 63 characters"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to the pods. Keys must be annotation keys
	// (the form of a label key).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="spec.podAnnotations keys must be annotation keys: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// Pod security: the profile (Baseline or Restricted) and optional
	// security contexts that replace the profile's.
	podsecurity.Settings `json:",inline"`

	// Placement: the node selector and tolerations of the pods, and how
	// they spread over the nodes.
	placement.Placement `json:",inline"`
}

// ServicePort is one port of the Service, written as a core/v1 ServicePort.
type ServicePort struct {
	// Name of the port; required when there is more than one.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// Protocol of the port.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`

	// AppProtocol is the application protocol of the port: a label key
	// such as kubernetes.io/h2c, as a Service requires.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="spec.ports[].appProtocol must be a qualified name: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	AppProtocol *string `json:"appProtocol,omitempty"`

	// Port is the port the Service listens on.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// TargetPort is the container port traffic goes to; it defaults to port.
	// It must be a number because the container port is derived from it.
	// +optional
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`

	// NodePort is the port on every node, for serviceType NodePort or
	// LoadBalancer. Unset lets the cluster pick one.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePort int32 `json:"nodePort,omitempty"`
}

// AppServiceStatus is the observed state. The replica counts sit at the same
// paths as a Deployment's status.
type AppServiceStatus struct {
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

// AppService runs an image as a Deployment of `size` pods behind a Service.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=appsvc,categories=all
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
type AppService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   AppServiceSpec   `json:"spec"`
	Status AppServiceStatus `json:"status,omitempty"`
}

// AppServiceList is a list of AppService.
// +kubebuilder:object:root=true
type AppServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppService `json:"items"`
}

// WebService is an AppService under another name: the same spec, the same
// children. A WebService and an AppService of the same name in one namespace
// would need the same children; the second one created reports a conflict.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=websvc,categories=all
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
type WebService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   AppServiceSpec   `json:"spec"`
	Status AppServiceStatus `json:"status,omitempty"`
}

// WebServiceList is a list of WebService.
// +kubebuilder:object:root=true
type WebServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WebService `json:"items"`
}

// GetConditions returns the status conditions.
func (a *AppService) GetConditions() []metav1.Condition { return a.Status.Conditions }

// SetConditions replaces status.conditions.
func (a *AppService) SetConditions(c []metav1.Condition) { a.Status.Conditions = c }

// GetConditions returns the status conditions.
func (w *WebService) GetConditions() []metav1.Condition { return w.Status.Conditions }

// SetConditions replaces status.conditions.
func (w *WebService) SetConditions(c []metav1.Condition) { w.Status.Conditions = c }
