// Package v1alpha1 contains the app.redislabs.com/v1alpha1 API:
// RedisEnterpriseCluster, a Redis primary and its replicas whose roles the
// operator sets through Redis itself.
// +kubebuilder:object:generate=true
// +groupName=app.redislabs.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "app.redislabs.com", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
