package v1alpha1

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// TestCRDDefaultsMatchTheGoDefaults keeps the defaults the API server
// applies (markers) and the ones the builder falls back to (constants) the same.
func TestCRDDefaultsMatchTheGoDefaults(t *testing.T) {
	data, err := os.ReadFile("../../../config/crd/bases/cache.example.com_memcacheds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]

	var image string
	if err := json.Unmarshal(spec.Properties["image"].Default.Raw, &image); err != nil {
		t.Fatal(err)
	}
	if image != DefaultImage {
		t.Errorf("CRD default image %q, Go default %q", image, DefaultImage)
	}

	var res corev1.ResourceRequirements
	if err := json.Unmarshal(spec.Properties["resources"].Default.Raw, &res); err != nil {
		t.Fatal(err)
	}
	mem := resource.MustParse(DefaultMemory)
	want := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(DefaultCPURequest), corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("CRD default resources differ from the Go defaults (-go +crd):\n%s", diff)
	}

	if got := spec.Properties["size"].Maximum; got == nil || *got != MaxSize {
		t.Errorf("CRD maximum size %v, Go MaxSize %d", got, MaxSize)
	}
}
