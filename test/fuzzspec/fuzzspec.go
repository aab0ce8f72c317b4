// Package fuzzspec makes custom resources of every app-operator kind out of
// fuzz input, for the fuzz targets of the builders and for the controller
// suite, which feeds the same inputs (the committed seed corpus and a fixed
// pseudo-random sample) through the real API server.
//
// A resource is filled straight from its API type with randfill, the way
// apimachinery's round-trip fuzzers fill theirs: every field of the spec is
// filled, so a field added to a type is fuzzed with no change here. The
// fill functions (see Funcs) only give a value the shape a user would
// write, often a value at or beyond a limit of the schema, and sometimes
// any value of its type.
package fuzzspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/randfill"

	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/kinds"
)

// scheme knows the kinds, to set a resource's apiVersion and kind.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := kinds.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// NewFiller returns a filler with this package's fill functions that draws
// its values from data, the bytes of a fuzz input: the same bytes give the
// same values.
func NewFiller(data []byte) *randfill.Filler {
	return withFuncs(randfill.NewFromGoFuzz(data))
}

// NewSeededFiller returns a filler with this package's fill functions that
// draws its values from a pseudo-random source with the given seed.
func NewSeededFiller(seed int64) *randfill.Filler {
	return withFuncs(randfill.New().RandSource(rand.NewSource(seed)))
}

func withFuncs(f *randfill.Filler) *randfill.Filler {
	// A list or map of two entries tells the builders what a longer one
	// would (duplicates, names, order), and each more entry is one more
	// chance of a value the schema refuses.
	return f.NilChance(0.2).NumElements(1, 2).Funcs(Funcs()...)
}

// Fill fills obj, a resource of one of the operator's kinds, from f: a name
// that is a DNS label (see Name) and every field of its spec. obj ends in
// namespace ns, with its apiVersion and kind set.
func Fill(f *randfill.Filler, ns string, obj client.Object) {
	var name string
	f.Fill(&name)
	obj.SetName(Name(name))
	f.Fill(specOf(obj))
	if m, ok := obj.(*customv1.MicroServiceDeploy); ok {
		// The API server requires spec.fullName to be the name.
		m.Spec.FullName = m.Name
	}
	setKind(obj, ns)
}

// Decode makes obj, a resource of one of the operator's kinds, out of a
// fuzz input. When data is the JSON of such a resource (the seed corpora
// hold every sample in config/samples that way), obj is that resource,
// whatever its kind; otherwise Fill fills it from a filler drawing from
// data. obj ends in namespace ns, with its apiVersion and kind set.
func Decode(data []byte, ns string, obj client.Object) {
	if DecodeJSON(data, obj) {
		setKind(obj, ns)
		return
	}
	Fill(NewFiller(data), ns, obj)
}

// DecodeJSON decodes data into v, a pointer to a struct, when data is a
// JSON object with no field v lacks, and reports whether it did. v is left
// zero when it did not.
func DecodeJSON(data []byte, v any) bool {
	if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		reflect.ValueOf(v).Elem().SetZero()
		return false
	}
	return true
}

// specOf returns a pointer to the Spec field of obj: every kind has one.
func specOf(obj client.Object) any {
	spec := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if !spec.IsValid() {
		panic(fmt.Sprintf("%T has no spec", obj))
	}
	return spec.Addr().Interface()
}

func setKind(obj client.Object, ns string) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		panic(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
}

// Name makes a DNS label (what the API server admits as the name of every
// kind) out of any string, so that a fuzzed name always names its
// children. A DNS label is its own name.
func Name(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := b.String()
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "a" + n
	}
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.TrimRight(n, "-")
}

// Exposure returns the operator-wide MicroServiceDeploy options a fuzz
// input selects with the number i: no base domain; a base domain; or a
// base domain, an Ingress class and an external authentication endpoint.
func Exposure(i uint8) (baseDomain, ingressClass, authURL string) {
	switch i % 3 {
	case 1:
		return "apps.example.com", "", ""
	case 2:
		return "apps.example.com", "nginx", "https://auth.example.com/check"
	}
	return "", "", ""
}
