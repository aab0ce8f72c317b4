package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// The ratcheting tests check that a resource stored under the current
// schema stays updatable when a later version of the operator tightens the
// schema under it: an update that leaves the now-invalid field as it is
// (including a status write, which the operator makes on every change) is
// accepted; one that changes that field to another invalid value is not.
//
// Kubernetes ratchets CRD validation (GA since 1.30): OpenAPI schema checks
// and CEL rules that do not use oldSelf are skipped for a value equal to
// the stored one. The tests simulate the tighter future schema by updating
// the CRD in place, and put the original back when they end. The CRDs are
// shared with every test of the package, which is why these tests never
// run in parallel, and why the cleanup waits until the API server serves
// the original schema again.

// TestMyWebKeepsAnUntouchedNodePortAndPageUpdatable tightens MyWeb's
// nodePortNumber to the default node port range (a schema check) and its
// page to 100 characters (a CEL rule).
func TestMyWebKeepsAnUntouchedNodePortAndPageUpdatable(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	page := "<p>" + strings.Repeat("a", 200) + "</p>"
	newWeb := func(name string) *operatorv1.MyWeb {
		return &operatorv1.MyWeb{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       operatorv1.MyWebSpec{Image: "nginx", NodePortNumber: 80, PageContentHtml: page},
		}
	}
	web := newWeb("stored")
	testenv.Create(t, k8s, web)

	tightenCRD(t, "mywebs.operator.k8s-summit.org", func(spec *apiextensionsv1.JSONSchemaProps) {
		port := spec.Properties["nodePortNumber"]
		port.Minimum, port.Maximum = ptr.To[float64](30000), ptr.To[float64](32767)
		spec.Properties["nodePortNumber"] = port
		html := spec.Properties["pageContentHtml"]
		html.XValidations = append(html.XValidations, apiextensionsv1.ValidationRule{
			Rule: "self.size() <= 100", Message: "spec.pageContentHtml must be at most 100 characters"})
		spec.Properties["pageContentHtml"] = html
	}, func() error {
		// The probe: a new resource with the old values.
		return k8s.Create(ctx, newWeb("probe"), client.DryRunAll)
	})

	// A change elsewhere in the spec, and a status write.
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) { w.Spec.Replicas = ptr.To[int32](2) })
	if web.Spec.NodePortNumber != 80 || web.Spec.PageContentHtml != page {
		t.Fatalf("the update changed the untouched fields: %+v", web.Spec)
	}
	patch := client.MergeFrom(web.DeepCopy())
	web.Status.Completed = true
	if err := k8s.Status().Patch(ctx, web, patch); err != nil {
		t.Fatalf("status write on a resource with an untouched invalid field: %v", err)
	}

	// Changing the invalid fields to other invalid values is refused.
	changed := web.DeepCopy()
	changed.Spec.NodePortNumber = 81
	if err := refused(k8s.Update(ctx, changed, client.DryRunAll), "spec.nodePortNumber"); err != nil {
		t.Error(err)
	}
	changed = web.DeepCopy()
	changed.Spec.PageContentHtml = strings.Repeat("b", 150)
	if err := refused(k8s.Update(ctx, changed, client.DryRunAll), "spec.pageContentHtml must be at most 100 characters"); err != nil {
		t.Error(err)
	}
	// And to valid ones, accepted.
	changed = web.DeepCopy()
	changed.Spec.NodePortNumber, changed.Spec.PageContentHtml = 30100, "<p>ok</p>"
	if err := k8s.Update(ctx, changed, client.DryRunAll); err != nil {
		t.Errorf("update to valid values: %v", err)
	}
}

// TestMemcachedKeepsAnUntouchedSizeUpdatable lowers Memcached's largest
// size from 256 to 16 under a resource of size 100.
func TestMemcachedKeepsAnUntouchedSizeUpdatable(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	newCache := func(name string) *cachev1alpha1.Memcached {
		return &cachev1alpha1.Memcached{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       cachev1alpha1.MemcachedSpec{Size: 100},
		}
	}
	m := newCache("stored")
	testenv.Create(t, k8s, m)

	tightenCRD(t, "memcacheds.cache.example.com", func(spec *apiextensionsv1.JSONSchemaProps) {
		size := spec.Properties["size"]
		size.Maximum = ptr.To[float64](16)
		spec.Properties["size"] = size
	}, func() error {
		return k8s.Create(ctx, newCache("probe"), client.DryRunAll)
	})

	testenv.Update(t, k8s, m, func(m *cachev1alpha1.Memcached) { m.Spec.Image = "memcached:1.6" })
	if m.Spec.Size != 100 {
		t.Fatalf("the update changed the size to %d", m.Spec.Size)
	}
	changed := m.DeepCopy()
	changed.Spec.Size = 99
	if err := refused(k8s.Update(ctx, changed, client.DryRunAll), "spec.size"); err != nil {
		t.Error(err)
	}
	changed = m.DeepCopy()
	changed.Spec.Size = 16
	if err := k8s.Update(ctx, changed, client.DryRunAll); err != nil {
		t.Errorf("update to size 16: %v", err)
	}
}

// tightenCRD applies tighten to the spec schema of the CRD's only version
// and waits until probe, a write that the tighter schema refuses, is
// refused. When the test ends it restores the original schema and waits
// until probe is accepted again.
func tightenCRD(t *testing.T, name string, tighten func(spec *apiextensionsv1.JSONSchemaProps), probe func() error) {
	t.Helper()
	ctx := context.Background()
	cs, err := apiextensionsclient.NewForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	if err := probe(); err != nil {
		t.Fatalf("the probe is refused before the schema is tightened: %v", err)
	}
	setSchema := func(mutate func(*apiextensionsv1.CustomResourceValidation)) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, func() (bool, string) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(crd.Spec.Versions) != 1 {
				t.Fatalf("CRD %s has %d versions, want 1", name, len(crd.Spec.Versions))
			}
			mutate(crd.Spec.Versions[0].Schema)
			if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}

	var original *apiextensionsv1.CustomResourceValidation
	setSchema(func(v *apiextensionsv1.CustomResourceValidation) {
		original = v.DeepCopy()
		spec := v.OpenAPIV3Schema.Properties["spec"]
		tighten(&spec)
		v.OpenAPIV3Schema.Properties["spec"] = spec
	})
	t.Cleanup(func() {
		setSchema(func(v *apiextensionsv1.CustomResourceValidation) { *v = *original })
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			if err := probe(); err != nil {
				return false, "the original schema is not served yet: " + err.Error()
			}
			return true, ""
		})
	})
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return probe() != nil, "the tighter schema is not served yet"
	})
}
