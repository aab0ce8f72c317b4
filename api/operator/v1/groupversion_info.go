// Package v1 contains the operator.k8s-summit.org/v1 API: MyWeb, a web page
// served by nginx from the HTML in the resource.
// +kubebuilder:object:generate=true
// +groupName=operator.k8s-summit.org
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "operator.k8s-summit.org", Version: "v1"}

	// SchemeBuilder registers the kinds of this API.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
