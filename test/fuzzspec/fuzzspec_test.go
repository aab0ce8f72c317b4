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

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	redislabsv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

var update = flag.Bool("update", false, "write the seed corpus entries of the samples in config/samples")

// kinds returns a new resource of every kind.
func kinds() []client.Object {
	return []client.Object{&appv1.AppService{}, &appv1.WebService{}, &cachev1alpha1.Memcached{}, &operatorv1.MyWeb{}, &customv1.MicroServiceDeploy{}, &redislabsv1alpha1.RedisEnterpriseCluster{}}
}

// TestFillReachesEveryField fills many resources of every kind and checks
// that every field of the spec types of the API packages (not the fields
// of the core types they hold) is set in some of them, and every optional
// one (a pointer, a list, a map) also left unset in some: a field added to
// a spec is fuzzed, and no fill function hides one.
func TestFillReachesEveryField(t *testing.T) {
	for _, kind := range kinds() {
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
		for _, kind := range kinds() {
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

// sampleEntries are the arguments of each fuzz target's seed corpus entry
// for a sample of a kind, in the JSON of the sample: by kind, the corpus
// directory (under internal/resources) and the arguments.
var sampleEntries = map[string][]struct {
	dir  string
	args func(sample []byte) []any
}{
	"AppService":             {{"appservice/testdata/fuzz/FuzzBuild", one}},
	"WebService":             {{"appservice/testdata/fuzz/FuzzBuild", one}},
	"Memcached":              {{"memcached/testdata/fuzz/FuzzBuild", one}},
	"MyWeb":                  {{"myweb/testdata/fuzz/FuzzBuild", one}},
	"RedisEnterpriseCluster": {{"redisenterprisecluster/testdata/fuzz/FuzzBuild", one}},
	"MicroServiceDeploy": {
		// The operator's default options: nothing exposed.
		{"microservicedeploy/testdata/fuzz/FuzzBuild", func(s []byte) []any { return []any{s, uint8(0), ""} }},
		{"microservicedeploy/testdata/fuzz/FuzzQuota", func(s []byte) []any { return []any{s, s} }},
	},
}

func one(s []byte) []any { return []any{s} }

// TestSeedCorporaHoldTheSamples checks that the seed corpus of every fuzz
// target of a kind holds each sample of that kind in config/samples, as
// the entry sample-<file>; -update writes them.
func TestSeedCorporaHoldTheSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples (%v)", err)
	}
	for _, file := range files {
		y, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sample, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(sample, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		entries, ok := sampleEntries[meta.Kind]
		if !ok {
			t.Errorf("%s: no fuzz target for kind %q", file, meta.Kind)
		}
		for _, e := range entries {
			path := filepath.Join("..", "..", "internal", "resources", e.dir, "sample-"+strings.TrimSuffix(filepath.Base(file), ".yaml"))
			want := EncodeEntry(e.args(sample)...)
			if *update {
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
