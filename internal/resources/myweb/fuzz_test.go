package myweb

import (
	"testing"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds the children of MyWebs whose specs are filled from the
// fuzz input (see fuzzspec.Decode): the builder never panics, the children
// hold the invariants of fuzzspec.CheckChildren, the ConfigMap holds the
// page as given and the pod template carries its hash. The seed corpus is
// in testdata/fuzz/FuzzBuild; the controller suite also applies it to the
// real API server with a server-side dry run.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		w := &operatorv1.MyWeb{}
		fuzzspec.Decode(data, "ns", w)
		w.UID = "uid-1"
		owner := resources.OwnerOf(w, operatorv1.GroupVersion.WithKind("MyWeb"))
		children := Build(owner, &w.Spec, resources.Defaults{})
		objs := children.Objects()
		if err := fuzzspec.CheckChildren(owner, "myweb", objs); err != nil {
			t.Fatalf("%+v: %v", w.Spec, err)
		}
		if err := fuzzspec.Same(objs, Build(owner, &w.Spec, resources.Defaults{}).Objects()); err != nil {
			t.Fatal(err)
		}
		page := w.Spec.PageContentHtml
		if got := children.ConfigMap.Data[PageKey]; got != page {
			t.Fatalf("ConfigMap holds %q, want the page %q", got, page)
		}
		if got := children.Deployment.Spec.Template.Annotations[PageHashAnnotation]; got != PageHash(page) {
			t.Fatalf("pod template hash %q, want %q", got, PageHash(page))
		}
	})
}
