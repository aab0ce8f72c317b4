package fuzzspec

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEncodeReadsBack(t *testing.T) {
	g := NewRandom(1)
	dir := t.TempDir()
	for i := range 20 {
		want := g.MicroServiceDeploy()
		want.Expose = uint8(200 + i) // a byte written as a quoted rune beyond ASCII
		if err := os.WriteFile(filepath.Join(dir, "entry"), Encode(want), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCorpus[MicroServiceDeployInput](dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got["entry"], want) {
			t.Fatalf("read back %+v, want %+v", got["entry"], want)
		}
	}
}

func TestReadCorpusRejectsAMismatch(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "entry"), Encode(MyWebInput{Name: "web"}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCorpus[MemcachedInput](dir); err == nil {
		t.Fatal("a MyWeb entry read as a Memcached input")
	}
}

func TestNameIsADNSLabel(t *testing.T) {
	for _, s := range []string{"", "-", "Nginx_App", "1web", "預", string(make([]byte, 100)), "a-"} {
		if errs := validation.IsDNS1035Label(Name(s)); len(errs) > 0 {
			t.Errorf("Name(%q) = %q: %v", s, Name(s), errs)
		}
	}
}
