// Package v1 contains the custom.ops/v1 API: MicroServiceDeploy, one
// resource that runs a whole microservice instance.
// +kubebuilder:object:generate=true
// +groupName=custom.ops
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "custom.ops", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this API, and the options types
// every API version carries, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MicroServiceDeploy{}, &MicroServiceDeployList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
