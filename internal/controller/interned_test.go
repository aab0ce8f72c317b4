package controller

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// decoded returns a Deployment whose strings are its own copies, as the
// informer decodes each one.
func decoded(name string) *appsv1.Deployment {
	own := strings.Clone
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{own("app.kubernetes.io/name"): "myweb", own("app"): name},
		Annotations: map[string]string{own("deployment.kubernetes.io/revision"): "1"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: own("operator.k8s-summit.org/v1"), Kind: own("MyWeb"), Name: name, UID: "uid-" + types.UID(name),
		}},
		ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: own("app-operator-myweb"), Operation: metav1.ManagedFieldsOperationApply, APIVersion: own("apps/v1"),
			FieldsType: own("FieldsV1"), FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`),
		}},
	}}
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func keyOf(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}

func TestInternedMetaSharesTheRepeatedStrings(t *testing.T) {
	table := newInternedMeta()
	a, b := decoded("app-00001"), decoded("app-00002")
	table.apply(a)
	table.apply(b)

	for _, key := range []string{"app.kubernetes.io/name", "app"} {
		if ka, kb := keyOf(a.Labels, key), keyOf(b.Labels, key); ka != key || !sameBytes(ka, kb) {
			t.Errorf("label key %q: not one copy in both objects", key)
		}
	}
	if ka, kb := keyOf(a.Annotations, "deployment.kubernetes.io/revision"), keyOf(b.Annotations, "deployment.kubernetes.io/revision"); !sameBytes(ka, kb) {
		t.Error("annotation key: not one copy in both objects")
	}
	ra, rb := a.OwnerReferences[0], b.OwnerReferences[0]
	if !sameBytes(ra.APIVersion, rb.APIVersion) || !sameBytes(ra.Kind, rb.Kind) {
		t.Error("owner's API version and kind: not one copy in both objects")
	}
	ma, mb := a.ManagedFields[0], b.ManagedFields[0]
	if !sameBytes(ma.Manager, mb.Manager) || !sameBytes(ma.APIVersion, mb.APIVersion) || !sameBytes(ma.FieldsType, mb.FieldsType) {
		t.Error("managedFields manager, API version and fields type: not one copy in both objects")
	}
	// The values are each object's own, unchanged.
	if a.Labels["app"] != "app-00001" || b.Labels["app"] != "app-00002" || b.Labels["app.kubernetes.io/name"] != "myweb" ||
		b.Annotations["deployment.kubernetes.io/revision"] != "1" || b.OwnerReferences[0].Name != "app-00002" ||
		b.ManagedFields[0].FieldsV1.GetRawString() != `{"f:spec":{}}` || b.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("values changed: %+v", b.ObjectMeta)
	}
}

func TestInternedMetaHoldsAtMostMaxInterned(t *testing.T) {
	table := newInternedMeta()
	for i := range maxInterned + 10 {
		table.intern(fmt.Sprintf("key-%d", i))
	}
	if len(table.strings) != maxInterned {
		t.Errorf("%d strings held, want %d", len(table.strings), maxInterned)
	}
	// A string beyond the bound is returned as given.
	s := strings.Clone("key-beyond")
	if got := table.intern(s); !sameBytes(got, s) {
		t.Error("a string beyond the bound was not returned as given")
	}
}

// The cache's transforms of the children and of the pods share the
// repeated strings; the pods' also drops their managedFields.
func TestCacheTransformsInternTheChildrenAndThePods(t *testing.T) {
	a, b := decoded("app-00001"), decoded("app-00002")
	cacheTransform(t, a, b)
	if !sameBytes(keyOf(a.Labels, "app.kubernetes.io/name"), keyOf(b.Labels, "app.kubernetes.io/name")) ||
		!sameBytes(a.ManagedFields[0].Manager, b.ManagedFields[0].Manager) {
		t.Error("Deployments: the label keys and managers are not one copy")
	}

	pa, pb := &corev1.Pod{ObjectMeta: decoded("app-00001-x").ObjectMeta}, &corev1.Pod{ObjectMeta: decoded("app-00002-y").ObjectMeta}
	cacheTransform(t, pa, pb)
	if !sameBytes(keyOf(pa.Labels, "app.kubernetes.io/name"), keyOf(pb.Labels, "app.kubernetes.io/name")) ||
		!sameBytes(pa.OwnerReferences[0].Kind, pb.OwnerReferences[0].Kind) {
		t.Error("pods: the label keys and owner kinds are not one copy")
	}
	if pa.ManagedFields != nil || pb.ManagedFields != nil {
		t.Error("pods: managedFields kept")
	}
}

// cacheTransform runs the cache transform of their type (CacheByObject)
// on objs, all of one type.
func cacheTransform(t *testing.T, objs ...client.Object) {
	t.Helper()
	for o, by := range CacheByObject() {
		if fmt.Sprintf("%T", o) != fmt.Sprintf("%T", objs[0]) {
			continue
		}
		for _, obj := range objs {
			if _, err := by.Transform(obj); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Fatalf("no cache entry for %T", objs[0])
}
