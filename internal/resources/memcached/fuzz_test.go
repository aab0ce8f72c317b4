package memcached

import (
	"slices"
	"strconv"
	"testing"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds the children of Memcacheds whose specs are filled from
// the fuzz input (see fuzzspec.Decode): the builder never panics, the
// children hold the invariants of fuzzspec.CheckChildren, there is a
// PodDisruptionBudget exactly when there is more than one pod, and
// memcached's cache size, when set, is positive.
// The seed corpus is in testdata/fuzz/FuzzBuild; the controller suite also
// applies it to the real API server with a server-side dry run.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &cachev1alpha1.Memcached{}
		fuzzspec.Decode(data, "ns", m)
		m.UID = "uid-1"
		owner := resources.OwnerOf(m, cachev1alpha1.GroupVersion.WithKind("Memcached"))
		children := Build(owner, &m.Spec, resources.Defaults{})
		objs := children.Objects()
		if err := fuzzspec.CheckChildren(owner, KindName, objs); err != nil {
			t.Fatalf("%+v: %v", m.Spec, err)
		}
		if err := fuzzspec.Same(objs, Build(owner, &m.Spec, resources.Defaults{}).Objects()); err != nil {
			t.Fatal(err)
		}
		if got, want := children.PodDisruptionBudget != nil, m.Spec.Size > 1; got != want {
			t.Fatalf("size %d: PodDisruptionBudget %v, want %v", m.Spec.Size, got, want)
		}
		args := children.Deployment.Spec.Template.Spec.Containers[0].Args
		if i := slices.Index(args, "-m"); i >= 0 {
			if i+1 >= len(args) {
				t.Fatalf("args %q: -m without a value", args)
			}
			if mb, err := strconv.ParseInt(args[i+1], 10, 64); err != nil || mb < 1 {
				t.Fatalf("args %q: cache size %q is not a positive number", args, args[i+1])
			}
		}
	})
}
