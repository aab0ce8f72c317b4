package fuzzspec

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/internal/kinds"
)

var update = flag.Bool("update", false, "write the seed corpus entries of the samples in config/samples")

// newResources returns a new resource of every kind.
func newResources() []client.Object {
	out := make([]client.Object, 0, len(kinds.All()))
	for _, k := range kinds.All() {
		out = append(out, k.New())
	}
	return out
}

// TestFillReachesEveryField fills many resources of every kind and checks
// that every field of the spec types of the API packages (not the fields
// of the core types they hold) is set in some of them, and every optional
// one (a pointer, a list, a map) also left unset in some: a field added to
// a spec is fuzzed, and no fill function hides one.
func TestFillReachesEveryField(t *testing.T) {
	for _, kind := range newResources() {
		t.Run(reflect.TypeOf(kind).Elem().Name(), func(t *testing.T) {
			f := NewSeededFiller(1)
			set, unset := map[string]bool{}, map[string]bool{}
			for range 500 {
				obj := reflect.New(reflect.TypeOf(kind).Elem()).Interface().(client.Object)
				Fill(f, "ns", obj)
				walk(reflect.ValueOf(obj).Elem().FieldByName("Spec"), "spec", set, unset)
			}
			for path, ok := range set {
				if !ok {
					t.Errorf("%s is never set", path)
				}
			}
			for path, ok := range unset {
				if !ok {
					t.Errorf("%s is never left unset", path)
				}
			}
		})
	}
}

// walk records, for each field under v (a struct of one of the API
// packages), whether it is set and, for an optional one, whether it is
// unset. It does not descend into the core types a spec embeds.
func walk(v reflect.Value, path string, set, unset map[string]bool) {
	for i := range v.NumField() {
		field, fv := v.Type().Field(i), v.Field(i)
		p := path + "." + field.Name
		if field.Anonymous {
			p = path
			walk(fv, p, set, unset)
			continue
		}
		set[p] = set[p] || !fv.IsZero()
		switch fv.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			unset[p] = unset[p] || fv.IsZero()
		}
		elem := fv
		switch fv.Kind() {
		case reflect.Pointer:
			if fv.IsNil() {
				continue
			}
			elem = fv.Elem()
		case reflect.Slice:
			if fv.Len() == 0 {
				continue
			}
			elem = fv.Index(0)
		}
		if elem.Kind() == reflect.Struct && strings.HasPrefix(elem.Type().PkgPath(), "github.com/app-operator/app-operator/api/") {
			walk(elem, p, set, unset)
		}
	}
}

func TestDecodeIsDeterministic(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xa5, 3, 0}, 50)} {
		for _, kind := range newResources() {
			a := reflect.New(reflect.TypeOf(kind).Elem()).Interface().(client.Object)
			b := reflect.New(reflect.TypeOf(kind).Elem()).Interface().(client.Object)
			Decode(data, "ns", a)
			Decode(data, "ns", b)
			if !equality.Semantic.DeepEqual(a, b) {
				t.Errorf("%T from %q decoded twice differs:\n%+v\n%+v", kind, data, a, b)
			}
		}
	}
}

func TestDecodeReadsAResourceAsJSON(t *testing.T) {
	data := []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"m","namespace":"other"},"spec":{"size":3}}`)
	m := &cachev1alpha1.Memcached{}
	Decode(data, "ns", m)
	if m.Name != "m" || m.Namespace != "ns" || m.Spec.Size != 3 || m.Kind != "Memcached" {
		t.Errorf("decoded %+v, want Memcached m in namespace ns of size 3", m)
	}
	// An unknown field makes it fill input.
	unknown := []byte(`{"spec":{"size":3,"color":"red"}}`)
	Decode(unknown, "ns", m)
	filled := &cachev1alpha1.Memcached{}
	Fill(NewFiller(unknown), "ns", filled)
	if !equality.Semantic.DeepEqual(m, filled) {
		t.Errorf("JSON with an unknown field decoded as %+v, want %+v", m, filled)
	}
}

func TestEncodeEntryReadsBack(t *testing.T) {
	dir := t.TempDir()
	want := []any{[]byte("{\"a\":\"預\"}\x00\xff"), uint8(200), "ns/x\n", uint8(0), []byte(nil)}
	if err := os.WriteFile(filepath.Join(dir, "entry"), EncodeEntry(want...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	want[4] = []byte{}
	if !reflect.DeepEqual(got["entry"], want) {
		t.Fatalf("read back %q, want %q", got["entry"], want)
	}
}

func TestNameIsADNSLabel(t *testing.T) {
	for _, s := range []string{"", "-", "Nginx_App", "1web", "預", string(make([]byte, 100)), "a-"} {
		if errs := validation.IsDNS1035Label(Name(s)); len(errs) > 0 {
			t.Errorf("Name(%q) = %q: %v", s, Name(s), errs)
		}
	}
	if got := Name("nginx-app"); got != "nginx-app" {
		t.Errorf("Name(%q) = %q, want it unchanged", "nginx-app", got)
	}
}

// sampleEntry is a seed corpus entry of a fuzz target for a kind's
// sample: the corpus directory, under the kind's builder package, and the
// arguments, from the JSON of the sample.
type sampleEntry struct {
	dir  string
	args func(sample []byte) []any
}

// sampleEntries returns the seed corpus entries of the fuzz targets for a
// sample of kind k. Every kind's builder has a FuzzBuild whose first
// argument is the resource; the others, where a target takes more, are
// those of the operator's defaults.
func sampleEntries(k kinds.Kind) []sampleEntry {
	build := func(rest ...any) sampleEntry {
		return sampleEntry{k.Builder + "/testdata/fuzz/FuzzBuild", func(s []byte) []any { return append([]any{s}, rest...) }}
	}
	switch k.GVK.Kind {
	case "MicroServiceDeploy":
		// The operator's default options: nothing exposed.
		return []sampleEntry{build(uint8(0), ""),
			{"microservicedeploy/testdata/fuzz/FuzzQuota", func(s []byte) []any { return []any{s, s} }}}
	case "EtcdCluster":
		// No membership recorded: a new cluster.
		return []sampleEntry{build([]byte{})}
	}
	return []sampleEntry{build()}
}

// TestSeedCorporaHoldTheSamples checks that the seed corpus of every fuzz
// target of a kind holds the kind's sample in config/samples, as the entry
// sample-<file>; -update writes them.
func TestSeedCorporaHoldTheSamples(t *testing.T) {
	for _, k := range kinds.All() {
		file := filepath.Join("..", "..", "config", "samples", k.Sample)
		y, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sample, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, e := range sampleEntries(k) {
			path := filepath.Join("..", "..", "internal", "resources", e.dir, "sample-"+strings.TrimSuffix(filepath.Base(file), ".yaml"))
			want := EncodeEntry(e.args(sample)...)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s does not hold the sample %s (%v): run `go test ./test/fuzzspec -run %s -update`", path, file, err, t.Name())
			}
		}
	}
}

// TestEveryBuilderHasFuzzBuild checks that the builder package of every
// kind has the fuzz target FuzzBuild whose seed corpus the dry-run suite
// reads.
func TestEveryBuilderHasFuzzBuild(t *testing.T) {
	for _, k := range kinds.All() {
		files, err := filepath.Glob(filepath.Join("..", "..", "internal", "resources", k.Builder, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found = found || bytes.Contains(data, []byte("\nfunc FuzzBuild(f *testing.F) {"))
		}
		if !found {
			t.Errorf("%s: internal/resources/%s has no FuzzBuild", k.GVK.Kind, k.Builder)
		}
	}
}
