// Package v1 contains the custom.ops/v1 API: MicroServiceDeploy, one
// resource that runs a whole microservice instance.
// +kubebuilder:object:generate=true
// +groupName=custom.ops
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "custom.ops", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
