package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/test/cluster"
)

// LoadSample reads the sample resource config/samples/<file>, unchanged,
// into obj, in namespace ns.
func LoadSample(t testing.TB, file string, obj client.Object, ns string) {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, obj); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	obj.SetNamespace(ns)
}
