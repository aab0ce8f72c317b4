package controller

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// internedMeta holds one copy of the strings every cached child's metadata
// repeats (label and annotation keys, its owner's API version and kind,
// the managers and operations of its managedFields), because each decoded
// object brings its own copies of them and the cache would keep them all.
type internedMeta struct {
	mu      sync.Mutex
	strings map[string]string
}

// maxInterned bounds the strings held: the operator's keys and managers
// are few, but nothing limits the keys others put on its children.
const maxInterned = 1024

// metaStrings is the table of the children's cache transforms.
var metaStrings = newInternedMeta()

func newInternedMeta() *internedMeta { return &internedMeta{strings: map[string]string{}} }

// intern returns the held copy of s, holding s if there is room.
func (t *internedMeta) intern(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.strings[s]; ok {
		return held
	}
	if len(t.strings) < maxInterned {
		t.strings[s] = s
	}
	return s
}

// internKeys returns m with its keys the held copies.
func (t *internedMeta) internKeys(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	interned := make(map[string]string, len(m))
	for k, v := range m {
		interned[t.intern(k)] = v
	}
	return interned
}

// apply swaps o's repeated metadata strings for the held copies.
func (t *internedMeta) apply(o metav1.Object) {
	if l := o.GetLabels(); len(l) > 0 {
		o.SetLabels(t.internKeys(l))
	}
	if a := o.GetAnnotations(); len(a) > 0 {
		o.SetAnnotations(t.internKeys(a))
	}
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			refs[i].APIVersion, refs[i].Kind = t.intern(refs[i].APIVersion), t.intern(refs[i].Kind)
		}
		o.SetOwnerReferences(refs)
	}
	if mf := o.GetManagedFields(); len(mf) > 0 {
		for i := range mf {
			e := &mf[i]
			e.Manager, e.APIVersion, e.FieldsType, e.Subresource = t.intern(e.Manager), t.intern(e.APIVersion), t.intern(e.FieldsType), t.intern(e.Subresource)
			e.Operation = metav1.ManagedFieldsOperationType(t.intern(string(e.Operation)))
		}
		o.SetManagedFields(mf)
	}
}
