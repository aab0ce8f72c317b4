package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/podsecurity"
)

// MaxPageBytes bounds spec.pageContentHtml. A ConfigMap holds at most 1 MiB
// (1048576 bytes) of keys and values; the page leaves room for its key.
const MaxPageBytes = 1000000

// MyWebSpec is the desired state of a MyWeb: an nginx image serving one page
// on a node port.
type MyWebSpec struct {
	// Image is the container image that serves the page; an nginx image,
	// which serves /usr/share/nginx/html.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// NodePortNumber is the port on every node that serves the page. It must
	// lie in the cluster's node port range (30000-32767 by default) and be
	// free.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	NodePortNumber int32 `json:"nodePortNumber"`

	// PageContentHtml is the page, served as index.html. At most 1000000
	// bytes, so that it fits in a ConfigMap.
	// +required
	// +kubebuilder:validation:MaxLength=1000000
	// +kubebuilder:validation:XValidation:rule="bytes(self).size() <= 1000000",message="spec.pageContentHtml must be at most 1000000 bytes (UTF-8) to fit in a ConfigMap"
	PageContentHtml string `json:"pageContentHtml"`

	// Replicas is the number of nginx pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Pod security: the profile (Baseline or Restricted) and optional
	// security contexts that replace the profile's. The official nginx
	// images run as root and need Baseline.
	podsecurity.Settings `json:",inline"`

	// Placement: the node selector and tolerations of the pods, and how
	// they spread over the nodes.
	placement.Placement `json:",inline"`
}

// MyWebStatus is the observed state.
type MyWebStatus struct {
	// Completed is true when the page of the current spec is served: the
	// Deployment is available and the Service exposes the requested node
	// port. It is false while a change rolls out and while the spec cannot
	// be applied; the conditions say why.
	//
	// It is required, as in the seed's CRD, and defaults to false so that
	// it is present from the first status write: a merge patch leaves out
	// a field that stays false, and the default fills it in.
	// +kubebuilder:default=false
	Completed bool `json:"completed"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MyWeb serves a web page: a ConfigMap holds the HTML, an nginx Deployment
// mounts it, and a NodePort Service exposes it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=web,categories=all
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="NodePortNumber",type=integer,JSONPath=`.spec.nodePortNumber`
// +kubebuilder:printcolumn:name="Completed",type=boolean,JSONPath=`.status.completed`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 63",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
type MyWeb struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   MyWebSpec   `json:"spec"`
	Status MyWebStatus `json:"status,omitempty"`
}

// MyWebList is a list of MyWeb.
// +kubebuilder:object:root=true
type MyWebList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MyWeb `json:"items"`
}

// GetConditions returns the status conditions.
func (m *MyWeb) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions replaces status.conditions.
func (m *MyWeb) SetConditions(c []metav1.Condition) { m.Status.Conditions = c }
