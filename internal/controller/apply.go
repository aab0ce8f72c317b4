package controller

import (
	"encoding/json"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// desiredChild is one child as a builder wants it: an apply configuration,
// plus what the engine reads off it once.
type desiredChild struct {
	ac     runtime.ApplyConfiguration
	gvk    schema.GroupVersionKind
	name   string
	fields map[string]any // the apply configuration as JSON, for comparisons
}

func newDesiredChild(ac runtime.ApplyConfiguration) (desiredChild, error) {
	fields, err := toJSONMap(ac)
	if err != nil {
		return desiredChild{}, err
	}
	u := unstructured.Unstructured{Object: fields}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || u.GetName() == "" {
		return desiredChild{}, fmt.Errorf("apply configuration %T has no kind or name", ac)
	}
	return desiredChild{ac: ac, gvk: gvk, name: u.GetName(), fields: fields}, nil
}

func (d desiredChild) String() string { return d.gvk.Kind + " " + d.name }

// upToDate reports whether the live object already holds every field the
// field manager applies with the value it would apply. It compares the
// fields the manager owns on the live object (from managedFields) with the
// desired ones: a field someone else changed is no longer owned by the
// manager, so it shows up as a difference and is applied again.
func upToDate(tc managedfields.TypeConverter, live runtime.Object, gvk schema.GroupVersionKind, manager string, desired map[string]any) (bool, error) {
	set, err := appliedFields(live, manager)
	if err != nil || set == nil {
		return false, err
	}

	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	typed, err := tc.ObjectToTyped(u)
	if err != nil {
		return false, fmt.Errorf("convert %s to typed value: %w", gvk.Kind, err)
	}
	owned, ok := typed.ExtractItems(set.Leaves()).AsValue().Unstructured().(map[string]any)
	if !ok {
		return false, nil
	}
	ownedNorm, err := toJSONMap(owned)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(ownedNorm, withoutIdentity(desired)), nil
}

// appliedBy reports whether manager owns fields of obj through apply: an
// object the operator shares with no controller (the namespace's quota) is
// its own only then, whatever labels it carries.
func appliedBy(obj metav1.Object, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			return true
		}
	}
	return false
}

// appliedFields returns the fields manager owns on live through apply; nil
// when it owns none.
func appliedFields(live runtime.Object, manager string) (*fieldpath.Set, error) {
	accessor, ok := live.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", live)
	}
	for _, mf := range accessor.GetManagedFields() {
		if mf.Manager != manager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("decode managed fields: %w", err)
		}
		return set, nil
	}
	return nil, nil
}

// handoverNeeded reports whether the handover h must be applied to live:
// while the kind's field manager still owns one of its fields (the kind
// stops setting them now), or while no manager owns any of them (the first
// handover after the child was created did not happen). Once another
// writer has taken the fields over, it is never applied again.
func handoverNeeded(tc managedfields.TypeConverter, live runtime.Object, h desiredChild, manager string) (bool, error) {
	accessor, ok := live.(metav1.Object)
	if !ok {
		return false, fmt.Errorf("%T has no object metadata", live)
	}
	u := &unstructured.Unstructured{Object: h.fields}
	u.SetGroupVersionKind(h.gvk)
	typed, err := tc.ObjectToTyped(u)
	if err != nil {
		return false, fmt.Errorf("convert %s to typed value: %w", h.gvk.Kind, err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		return false, err
	}
	fields := set.Leaves()
	ownedByAnyone := false
	for _, mf := range accessor.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		owned := &fieldpath.Set{}
		if err := owned.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return false, fmt.Errorf("decode managed fields: %w", err)
		}
		if owned.Leaves().Intersection(fields).Empty() {
			continue
		}
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			return true, nil
		}
		ownedByAnyone = true
	}
	return !ownedByAnyone, nil
}

// withoutIdentity drops the fields that identify an object rather than set
// it (apiVersion, kind, name, namespace); managedFields never list them.
func withoutIdentity(fields map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if k == "apiVersion" || k == "kind" {
			continue
		}
		out[k] = v
	}
	if md, ok := fields["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "name" && k != "namespace" {
				m[k] = v
			}
		}
		if len(m) == 0 {
			delete(out, "metadata")
		} else {
			out["metadata"] = m
		}
	}
	return out
}

// toJSONMap normalises v through JSON, so that two values of different Go
// types but the same serialisation compare equal.
func toJSONMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}
