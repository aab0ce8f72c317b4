package applyschema_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/app-operator/app-operator/internal/applyschema"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/test/cluster"
)

// TestSameAnswersAsClientGosConverter builds the children of every sample
// of config/samples and converts each with both converters: the reduced
// schema gives the same typed value and the same field set as client-go's
// whole schema.
func TestSameAnswersAsClientGosConverter(t *testing.T) {
	scheme := controller.NewScheme()
	full, reduced := applyconfigurations.NewTypeConverter(scheme), applyschema.TypeConverter(scheme)
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	// Every option that adds a child: the MicroServiceDeploy Ingress.
	opts := controller.Options{MicroServiceDeploy: microservicedeploy.Options{BaseDomain: "apps.example.com"}}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	kinds := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, _, err := decoder.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			children, err := controller.Build(obj, opts)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, ac := range children {
				content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac)
				if err != nil {
					t.Fatal(err)
				}
				u := &unstructured.Unstructured{Object: content}
				kinds[u.GetKind()] = true
				want, err := full.ObjectToTyped(u)
				if err != nil {
					t.Fatalf("%s, %s: client-go's converter: %v", file, u.GetKind(), err)
				}
				got, err := reduced.ObjectToTyped(u)
				if err != nil {
					t.Fatalf("%s, %s: %v", file, u.GetKind(), err)
				}
				if !value.Equals(want.AsValue(), got.AsValue()) {
					t.Errorf("%s, %s: typed values differ", file, u.GetKind())
				}
				wantSet, err := want.ToFieldSet()
				if err != nil {
					t.Fatal(err)
				}
				gotSet, err := got.ToFieldSet()
				if err != nil {
					t.Fatal(err)
				}
				if !wantSet.Equals(gotSet) {
					t.Errorf("%s, %s: field sets differ:\n%s\nwant\n%s", file, u.GetKind(), gotSet, wantSet)
				}
			}
		}
	}
	// The samples build more than one kind of child: the comparison is
	// not of one type only.
	if len(kinds) < 5 {
		t.Errorf("the samples built children of %d kinds only: %v", len(kinds), kinds)
	}
}

// TestCoversEveryCachedType converts an object of every built-in type the
// operator caches and may apply, and refuses a type it does not cache: the
// schema is the reduced one, and kept in step with controller.CacheByObject
// (run `make generate` after adding a child type).
func TestCoversEveryCachedType(t *testing.T) {
	scheme := controller.NewScheme()
	full, reduced := applyconfigurations.NewTypeConverter(scheme), applyschema.TypeConverter(scheme)
	checked := 0
	for o := range controller.CacheByObject() {
		if controller.OnlyRead(o) {
			continue
		}
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			t.Fatal(err)
		}
		obj := o.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if _, err := full.ObjectToTyped(obj); err != nil {
			continue // one of the operator's own kinds: not in client-go's schema
		}
		if _, err := reduced.ObjectToTyped(obj); err != nil {
			t.Errorf("%s: %v (run make generate)", gvk, err)
		}
		checked++
	}
	if checked < 9 {
		t.Errorf("only %d cached types are built-in ones", checked)
	}
	volume := &corev1.PersistentVolume{}
	volume.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolume"))
	if _, err := reduced.ObjectToTyped(volume); err == nil {
		t.Error("a PersistentVolume, which the operator does not cache, converts: the schema is not the reduced one")
	}
}
