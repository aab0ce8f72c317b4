package admission

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestMyWebAdmission checks that the CRD schema rejects the input it can
// catch, with a message naming the field, and accepts the good input.
func TestMyWebAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	tests := []struct {
		name   string
		mutate func(*operatorv1.MyWeb)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"should accept the sample", func(*operatorv1.MyWeb) {}, ""},
		{"should reject an empty image", func(m *operatorv1.MyWeb) { m.Spec.Image = "" }, "spec.image"},
		{"should reject node port 0", func(m *operatorv1.MyWeb) { m.Spec.NodePortNumber = 0 }, "spec.nodePortNumber"},
		{"should reject a negative node port", func(m *operatorv1.MyWeb) { m.Spec.NodePortNumber = -1 }, "spec.nodePortNumber"},
		{"should reject node port 65536", func(m *operatorv1.MyWeb) { m.Spec.NodePortNumber = 65536 }, "spec.nodePortNumber"},
		// The cluster's node port range is not known to the schema.
		{"should accept node port 80, which only the Service can refuse", func(m *operatorv1.MyWeb) { m.Spec.NodePortNumber = 80 }, ""},
		{"should accept an empty page", func(m *operatorv1.MyWeb) { m.Spec.PageContentHtml = "" }, ""},
		{"should accept a page of 1000000 bytes", func(m *operatorv1.MyWeb) {
			m.Spec.PageContentHtml = strings.Repeat("a", operatorv1.MaxPageBytes)
		}, ""},
		{"should reject a page of 1000001 characters", func(m *operatorv1.MyWeb) {
			m.Spec.PageContentHtml = strings.Repeat("a", operatorv1.MaxPageBytes+1)
		}, "spec.pageContentHtml"},
		// 400000 characters of 3 bytes each: within MaxLength, but 1.2 MB.
		{"should reject a page of few characters but too many bytes", func(m *operatorv1.MyWeb) {
			m.Spec.PageContentHtml = strings.Repeat("預", 400000)
		}, "spec.pageContentHtml must be at most 1000000 bytes"},
		{"should reject negative replicas", func(m *operatorv1.MyWeb) { m.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas"},
		{"should reject a name that cannot name a Service", func(m *operatorv1.MyWeb) { m.Name = "1web" }, "metadata.name must be a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			web := &operatorv1.MyWeb{}
			testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)
			tt.mutate(web)
			testenv.ExpectAdmission(t, k8s.Create(context.Background(), web, client.DryRunAll), tt.wantErr)
		})
	}
}

// TestMyWebAdmissionRequiresTheSeedFields sends the sample without each of
// the fields the seed always sets, as kubectl would.
func TestMyWebAdmissionRequiresTheSeedFields(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	for _, field := range []string{"image", "nodePortNumber", "pageContentHtml"} {
		t.Run("should require spec."+field, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			testenv.LoadSample(t, "operator_v1_myweb.yaml", u, ns)
			unstructured.RemoveNestedField(u.Object, "spec", field)
			err := k8s.Create(context.Background(), u, client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec."+field+": Required value") {
				t.Fatalf("want spec.%s: Required value, got %v", field, err)
			}
		})
	}
}
