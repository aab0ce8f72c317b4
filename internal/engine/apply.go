package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Desired is one child as a builder wants it: its apply
// configuration, as JSON, and what the engine reads off it once.
type Desired struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	// data is the apply configuration as JSON, and digest its FNV-1a hash:
	// the same configuration always serialises the same way.
	data   []byte
	digest uint64
}

// identified is what the typed apply configurations of client-go tell
// about the object they configure.
type identified interface {
	GetNamespace() *string
	GetName() *string
	GetKind() *string
	GetAPIVersion() *string
}

func NewDesired(ac runtime.ApplyConfiguration) (Desired, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return Desired{}, err
	}
	d := Desired{data: data, digest: digestOf(data)}
	if id, ok := ac.(identified); ok {
		apiVersion, kind, name := id.GetAPIVersion(), id.GetKind(), id.GetName()
		if apiVersion != nil && kind != nil && name != nil {
			d.gvk = schema.FromAPIVersionAndKind(*apiVersion, *kind)
			d.name = *name
		}
		if ns := id.GetNamespace(); ns != nil {
			d.namespace = *ns
		}
	}
	if d.gvk.Kind == "" || d.name == "" {
		return Desired{}, fmt.Errorf("apply configuration %T has no kind or name", ac)
	}
	return d, nil
}

// fields returns the apply configuration as a JSON map, for comparisons.
func (d Desired) fields() (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(d.data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (d Desired) String() string { return d.gvk.Kind + " " + d.name }

// key is the child's key among the observed objects.
func (d Desired) key() string { return ChildKey(d.gvk.Kind, d.name) }

// Apply applies d under the field manager, taking over the fields
// another manager holds, and returns the server's answer: the object as
// it now is, managedFields included.
func Apply(ctx context.Context, c client.Client, d Desired, manager string) (client.Object, error) {
	ro, err := c.Scheme().New(d.gvk)
	if err != nil {
		return nil, err
	}
	o, ok := ro.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", d.gvk)
	}
	o.SetNamespace(d.namespace)
	o.SetName(d.name)
	if err := c.Patch(ctx, o, client.RawPatch(types.ApplyPatchType, d.data), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return nil, err
	}
	return o, nil
}

// UpToDate reports whether the live object already holds every field the
// field manager applies with the value it would apply. It compares the
// fields the manager owns on the live object (from managedFields) with the
// desired ones: a field someone else changed is no longer owned by the
// manager, so it shows up as a difference and is applied again.
func UpToDate(tc managedfields.TypeConverter, live runtime.Object, d Desired, manager string) (bool, error) {
	set, err := appliedFields(live, manager)
	if err != nil || set == nil {
		return false, err
	}
	desired, err := d.fields()
	if err != nil {
		return false, err
	}

	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(d.gvk)
	typed, err := tc.ObjectToTyped(u)
	if err != nil {
		return false, fmt.Errorf("convert %s to typed value: %w", d.gvk.Kind, err)
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

// isApplyOf reports whether mf records the fields manager applied to the
// object itself (not to a subresource).
func isApplyOf(mf metav1.ManagedFieldsEntry, manager string) bool {
	return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == ""
}

// AppliedBy reports whether manager owns fields of obj through apply: an
// object the operator shares with no controller (the namespace's quota) is
// its own only then, whatever labels it carries.
func AppliedBy(obj metav1.Object, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if isApplyOf(mf, manager) {
			return true
		}
	}
	return false
}

// appliedEntry returns manager's apply entry in live's managedFields; nil
// when it owns no fields through apply.
func appliedEntry(live runtime.Object, manager string) (*metav1.ManagedFieldsEntry, error) {
	accessor, ok := live.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", live)
	}
	for _, mf := range accessor.GetManagedFields() {
		if isApplyOf(mf, manager) && mf.FieldsV1 != nil {
			return &mf, nil
		}
	}
	return nil, nil
}

// appliedFields returns the fields manager owns on live through apply; nil
// when it owns none.
func appliedFields(live runtime.Object, manager string) (*fieldpath.Set, error) {
	mf, err := appliedEntry(live, manager)
	if mf == nil || err != nil {
		return nil, err
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
		return nil, fmt.Errorf("decode managed fields: %w", err)
	}
	return set, nil
}

// ownedDigest is a digest of the set of fields manager owns on live
// through apply; false when it owns none.
//
// The set changes whenever a value in it does: a write by anyone else
// that changes or removes a field the manager owns takes the field from
// it (an update moves it to the updater's manager, a forced apply to the
// applier's, a removal from every manager). So a child whose digest is
// the one it had when the manager applied it, or when upToDate last found
// it holding every applied value, still holds them all.
func ownedDigest(live runtime.Object, manager string) (uint64, bool) {
	mf, err := appliedEntry(live, manager)
	if mf == nil || err != nil {
		return 0, false
	}
	return digestOf(mf.FieldsV1.GetRawBytes()), true
}

// digestOf is the FNV-1a hash of data.
func digestOf(data []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// handoverNeeded reports whether the handover h must be applied to live:
// while the kind's field manager still owns one of its fields (the kind
// stops setting them now), or while no manager owns any of them (the first
// handover after the child was created did not happen). Once another
// writer has taken the fields over, it is never applied again.
func handoverNeeded(tc managedfields.TypeConverter, live runtime.Object, h Desired, manager string) (bool, error) {
	accessor, ok := live.(metav1.Object)
	if !ok {
		return false, fmt.Errorf("%T has no object metadata", live)
	}
	fields, err := h.fields()
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(h.gvk)
	typed, err := tc.ObjectToTyped(u)
	if err != nil {
		return false, fmt.Errorf("convert %s to typed value: %w", h.gvk.Kind, err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		return false, err
	}
	leaves := set.Leaves()
	ownedByAnyone := false
	for _, mf := range accessor.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		owned := &fieldpath.Set{}
		if err := owned.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return false, fmt.Errorf("decode managed fields: %w", err)
		}
		if owned.Leaves().Intersection(leaves).Empty() {
			continue
		}
		if isApplyOf(mf, manager) {
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

// Name is the name of the object d applies.
func (d Desired) Name() string { return d.name }

// Kind is the kind of the object d applies.
func (d Desired) Kind() string { return d.gvk.Kind }
