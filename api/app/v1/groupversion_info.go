// Package v1 contains the app.example.com/v1 API: AppService and WebService,
// which run an image as a Deployment exposed by a Service.
// +kubebuilder:object:generate=true
// +groupName=app.example.com
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "app.example.com", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this API, and the options types
// every API version carries, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AppService{}, &AppServiceList{}, &WebService{}, &WebServiceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
