package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMatchedChildren(t *testing.T) {
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	child := func(uid string, entries ...metav1.ManagedFieldsEntry) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u-" + uid), ResourceVersion: "10", ManagedFields: entries}}
	}
	at := func(version string, o client.Object) client.Object {
		o.SetResourceVersion(version)
		return o
	}
	d := Desired{digest: 7}
	mine := entry("me", `{"f:spec":{"f:image":{}}}`)
	base, ok := matchOf(child("1", mine), d, "me")
	if !ok {
		t.Fatal("a child with fields the manager applied has no match")
	}
	for _, tc := range []struct {
		name string
		live client.Object
		d    Desired
		same bool
		owns bool
	}{
		{"should match the same child, fields and desire", child("1", mine), d, true, true},
		{"should match a later version of it (a status update)", at("12", child("1", mine)), d, true, true},
		{"should not match an older copy (a cache behind the last write)", at("9", child("1", mine)), d, false, true},
		{"should not match a child made again (another uid)", child("2", mine), d, false, true},
		{"should not match when another writer took a field", child("1", entry("me", `{"f:spec":{}}`)), d, false, true},
		{"should not match another desire", child("1", mine), Desired{digest: 8}, false, true},
		{"should have no match when the manager owns nothing", child("1", entry("other", `{"f:spec":{"f:image":{}}}`)), d, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, owns := matchOf(tc.live, tc.d, "me")
			if owns != tc.owns || matchedBefore([]matchedChild{base}, m) != tc.same {
				t.Errorf("match %+v (owns %v), base %+v: want same %v, owns %v", m, owns, base, tc.same, tc.owns)
			}
		})
	}

	var c matchedChildren
	key := client.ObjectKey{Namespace: "ns", Name: "app"}
	if c.Of(key) != nil {
		t.Fatal("a new resource has matched children")
	}
	c.Set(key, nil, []matchedChild{base})
	if got := c.Of(key); len(got) != 1 || got[0] != base {
		t.Errorf("Of after Set: %v", got)
	}
	c.Forget(key)
	if c.Of(key) != nil {
		t.Error("Of after Forget still has children")
	}
}
