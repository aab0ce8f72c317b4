// Package v1 contains the operator.k8s-summit.org/v1 API: MyWeb, a web page
// served by nginx from the HTML in the resource.
// +kubebuilder:object:generate=true
// +groupName=operator.k8s-summit.org
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "operator.k8s-summit.org", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this API, and the options types
// every API version carries, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MyWeb{}, &MyWebList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
