package myweb

import (
	"testing"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds the children of MyWebs from fuzzed specs: the builder
// never panics, the children hold the invariants of
// fuzzspec.CheckChildren, the ConfigMap holds the page as given and the pod
// template carries its hash. The seed corpus is in testdata/fuzz/FuzzBuild;
// the controller suite also applies it to the real API server with a
// server-side dry run.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, image string, nodePort int32, page string, replicas int32, profile uint8) {
		in := fuzzspec.MyWebInput{Name: name, Image: image, NodePort: nodePort, Page: page, Replicas: replicas, Profile: profile}
		w := in.MyWeb("ns")
		w.UID = "uid-1"
		owner := resources.OwnerOf(w, operatorv1.GroupVersion.WithKind("MyWeb"))
		children := Build(owner, &w.Spec, resources.Defaults{})
		objs := children.Objects()
		if err := fuzzspec.CheckChildren(owner, "myweb", objs); err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		if err := fuzzspec.Same(objs, Build(owner, &w.Spec, resources.Defaults{}).Objects()); err != nil {
			t.Fatal(err)
		}
		if got := children.ConfigMap.Data[PageKey]; got != page {
			t.Fatalf("ConfigMap holds %q, want the page %q", got, page)
		}
		if got := children.Deployment.Spec.Template.Annotations[PageHashAnnotation]; got != PageHash(page) {
			t.Fatalf("pod template hash %q, want %q", got, PageHash(page))
		}
	})
}
