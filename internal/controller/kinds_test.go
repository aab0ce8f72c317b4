package controller_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/kinds"
)

// TestEveryKindIsServed checks that every kind of kinds.All is in the
// manager's scheme and cache and has a controller that builds it.
func TestEveryKindIsServed(t *testing.T) {
	s := controller.NewScheme()
	cached := controller.CacheByObject()
	for _, k := range kinds.All() {
		if !s.Recognizes(k.GVK) {
			t.Errorf("%s: not in the scheme", k.GVK.Kind)
		}
		inCache := false
		for o := range cached {
			inCache = inCache || reflect.TypeOf(o) == reflect.TypeOf(k.New())
		}
		if !inCache {
			t.Errorf("%s: not in the cache's scope", k.GVK.Kind)
		}
		obj := k.New()
		obj.SetName("example")
		obj.SetNamespace("ns")
		if _, err := controller.Build(obj, controller.Options{}); err != nil && strings.Contains(err.Error(), "not a kind") {
			t.Errorf("%s: %v", k.GVK.Kind, err)
		}
	}
	owned, err := controller.OwnedTypes()
	if err != nil || len(owned) == 0 {
		t.Errorf("owned types %v: %v", owned, err)
	}
}
