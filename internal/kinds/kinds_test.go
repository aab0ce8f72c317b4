package kinds

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository's root, from this package's folder.
var repoRoot = filepath.Join("..", "..")

func TestEveryCRDIsAKindAndEveryKindHasItsCRD(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs (%v)", err)
	}
	var crds []string
	for _, f := range files {
		var crd struct {
			Metadata struct{ Name string }
			Spec     struct {
				Group    string
				Names    struct{ Kind, Plural string }
				Versions []struct{ Name string }
			}
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds = append(crds, crd.Metadata.Name)
		k, ok := byCRD(crd.Metadata.Name)
		if !ok {
			t.Errorf("%s: CRD %s is no kind of kinds.All()", f, crd.Metadata.Name)
			continue
		}
		if crd.Spec.Names.Kind != k.GVK.Kind || crd.Spec.Group != k.GVK.Group || !slices.ContainsFunc(crd.Spec.Versions, func(v struct{ Name string }) bool { return v.Name == k.GVK.Version }) {
			t.Errorf("%s: CRD serves %s %s %+v, want %s", f, crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Versions, k.GVK)
		}
	}
	for _, k := range All() {
		if !slices.Contains(crds, k.CRD()) {
			t.Errorf("%s: no CRD %s in config/crd/bases", k.GVK.Kind, k.CRD())
		}
	}
}

func TestEveryKindHasItsBuilderAndSample(t *testing.T) {
	for _, k := range All() {
		if fi, err := os.Stat(filepath.Join(repoRoot, "internal", "resources", k.Builder)); err != nil || !fi.IsDir() {
			t.Errorf("%s: no builder package internal/resources/%s (%v)", k.GVK.Kind, k.Builder, err)
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", k.Sample))
		if err != nil {
			t.Errorf("%s: %v", k.GVK.Kind, err)
			continue
		}
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Fatalf("%s: %v", k.Sample, err)
		}
		if meta.APIVersion != k.GVK.GroupVersion().String() || meta.Kind != k.GVK.Kind {
			t.Errorf("config/samples/%s is a %s %s, want %s", k.Sample, meta.APIVersion, meta.Kind, k.GVK)
		}
	}
}

// TestEverySampleIsAKinds checks that each sample under config/samples is
// the Sample of one kind, so no sample escapes the suites that read them
// through All.
func TestEverySampleIsAKinds(t *testing.T) {
	root := filepath.Join(repoRoot, "config", "samples")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || d.Name() == "kustomization.yaml" {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !slices.ContainsFunc(All(), func(k Kind) bool { return k.Sample == filepath.ToSlash(rel) }) {
			t.Errorf("config/samples/%s is the sample of no kind in kinds.All()", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOfFindsEveryKindAndNothingElse(t *testing.T) {
	for _, k := range All() {
		if got, ok := Of(k.New()); !ok || got.GVK != k.GVK {
			t.Errorf("Of(%T) = %v, %v", k.New(), got.GVK, ok)
		}
	}
	if _, ok := Of(&runtime.Unknown{}); ok {
		t.Error("Of found a kind for runtime.Unknown")
	}
}

func TestAddToSchemeKnowsEveryKind(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, k := range All() {
		if !s.Recognizes(k.GVK) {
			t.Errorf("the scheme does not know %s", k.GVK)
		}
	}
}

func byCRD(name string) (Kind, bool) {
	for _, k := range All() {
		if k.CRD() == name {
			return k, true
		}
	}
	return Kind{}, false
}
