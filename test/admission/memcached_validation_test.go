package admission

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestMemcachedAdmission checks that the CRD schema and CEL rules reject
// bad input with a message naming the field, and accept the good input.
func TestMemcachedAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	tests := []struct {
		name   string
		mutate func(*cachev1alpha1.Memcached)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"should accept the sample", func(*cachev1alpha1.Memcached) {}, ""},
		{"should accept zero pods", func(m *cachev1alpha1.Memcached) { m.Spec.Size = 0 }, ""},
		{"should accept the largest size", func(m *cachev1alpha1.Memcached) { m.Spec.Size = cachev1alpha1.MaxSize }, ""},
		{"should reject a negative size", func(m *cachev1alpha1.Memcached) { m.Spec.Size = -1 }, "spec.size"},
		{"should reject an absurd size", func(m *cachev1alpha1.Memcached) { m.Spec.Size = cachev1alpha1.MaxSize + 1 }, "spec.size"},
		{"should reject an image with a space", func(m *cachev1alpha1.Memcached) { m.Spec.Image = "memcached 1.6" }, "spec.image"},
		{"should reject a name that cannot name a Service", func(m *cachev1alpha1.Memcached) { m.Name = "1memcached" }, "metadata.name must be a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testenv.NewMemcached(t, ns)
			tt.mutate(m)
			testenv.ExpectAdmission(t, k8s.Create(context.Background(), m, client.DryRunAll), tt.wantErr)
		})
	}

	// Typed clients leave an empty image out; YAML can send it.
	t.Run("should reject an empty image", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"name": "empty-image", "namespace": ns},
			"spec":     map[string]any{"size": int64(3), "image": ""},
		}}
		testenv.ExpectAdmission(t, k8s.Create(context.Background(), u, client.DryRunAll), "spec.image")
	})
	t.Run("should reject a missing size", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"name": "no-size", "namespace": ns},
			"spec":     map[string]any{},
		}}
		testenv.ExpectAdmission(t, k8s.Create(context.Background(), u, client.DryRunAll), "spec.size")
	})
	t.Run("should reject kubectl scale beyond the largest size", func(t *testing.T) {
		m := testenv.NewMemcached(t, ns)
		testenv.Create(t, k8s, m)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), m) })
		scale := &autoscalingv1.Scale{}
		if err := k8s.SubResource("scale").Get(context.Background(), m, scale); err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = cachev1alpha1.MaxSize + 1
		testenv.ExpectAdmission(t, k8s.SubResource("scale").Update(context.Background(), m, client.WithSubResourceBody(scale)), "spec.size")
	})
}
