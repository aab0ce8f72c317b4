package appservice

import (
	"testing"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds the children of AppServices and WebServices whose specs
// are filled from the fuzz input (see fuzzspec.Decode): the builder never
// panics, and the children hold the invariants of fuzzspec.CheckChildren
// whatever the spec. The seed corpus is in testdata/fuzz/FuzzBuild; the
// controller suite also applies it, with a server-side dry run, to the
// real API server.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		app, web := &appv1.AppService{}, &appv1.WebService{}
		fuzzspec.Decode(data, "ns", app)
		fuzzspec.Decode(data, "ns", web)
		app.UID, web.UID = "uid-app", "uid-web"
		checkBuild(t, resources.OwnerOf(app, appv1.GroupVersion.WithKind("AppService")), "appservice", &app.Spec)
		checkBuild(t, resources.OwnerOf(web, appv1.GroupVersion.WithKind("WebService")), "webservice", &web.Spec)
	})
}

func checkBuild(t *testing.T, owner resources.Owner, kindName string, spec *appv1.AppServiceSpec) {
	t.Helper()
	objs := Build(owner, spec, resources.Defaults{}).Objects()
	if err := fuzzspec.CheckChildren(owner, kindName, objs); err != nil {
		t.Fatalf("%s %s: %v\nspec: %+v", owner.GVK.Kind, owner.Name, err, spec)
	}
	if err := fuzzspec.Same(objs, Build(owner, spec, resources.Defaults{}).Objects()); err != nil {
		t.Fatal(err)
	}
}
