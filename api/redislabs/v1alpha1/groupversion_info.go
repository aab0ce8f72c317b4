// Package v1alpha1 contains the app.redislabs.com/v1alpha1 API:
// RedisEnterpriseCluster, a Redis primary and its replicas whose roles the
// operator sets through Redis itself.
// +kubebuilder:object:generate=true
// +groupName=app.redislabs.com
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "app.redislabs.com", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this API, and the options types
// every API version carries, under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &RedisEnterpriseCluster{}, &RedisEnterpriseClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
