package controller_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/controller"
)

// statusDigestApp returns an AppService with a status of three conditions
// and entries managedFields entries.
func statusDigestApp(message string, entries int) *appv1.AppService {
	a := &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Labels: map[string]string{"a": "b"}},
		Spec:       appv1.AppServiceSpec{Size: ptr.To[int32](1), Image: "nginx:1.27", Ports: []appv1.ServicePort{{Port: 80}}},
	}
	for i := range entries {
		a.ManagedFields = append(a.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: fmt.Sprintf("writer-%d", i), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "app.example.com/v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:image":{},"f:size":{}}}`),
		})
	}
	a.Status.ObservedGeneration = 2
	a.Status.Selector = "app=app"
	for _, c := range []string{"Ready", "Progressing", "Degraded"} {
		a.Status.Conditions = append(a.Status.Conditions, metav1.Condition{
			Type: c, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: message, ObservedGeneration: 2,
		})
	}
	return a
}

// The digest of a status depends on the status only, and its cost does
// not grow with the rest of the object: a pass computes it for every
// status it writes and for every cached resource it finds behind one.
func TestStatusDigestReadsTheStatusOnly(t *testing.T) {
	small, large := statusDigestApp("ok", 0), statusDigestApp("ok", 200)
	large.Spec.Image = "nginx:1.28"
	ds, ok1 := controller.StatusDigest(small)
	dl, ok2 := controller.StatusDigest(large)
	if !ok1 || !ok2 || ds != dl {
		t.Errorf("equal statuses: digests %x (%v) and %x (%v), want equal", ds, ok1, dl, ok2)
	}
	if dm, _ := controller.StatusDigest(statusDigestApp("changed", 0)); dm == ds {
		t.Errorf("a changed condition message kept the digest %x", dm)
	}
	allocs := func(a *appv1.AppService) float64 {
		return testing.AllocsPerRun(20, func() { _, _ = controller.StatusDigest(a) })
	}
	if s, l := allocs(small), allocs(large); l > s {
		t.Errorf("digest of a status: %.0f allocations with 200 managedFields entries, %.0f with none: want no more", l, s)
	}
}
