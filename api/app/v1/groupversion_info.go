// Package v1 contains the app.example.com/v1 API: AppService and WebService,
// which run an image as a Deployment exposed by a Service.
// +kubebuilder:object:generate=true
// +groupName=app.example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "app.example.com", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
