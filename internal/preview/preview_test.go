package preview

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/app-operator/app-operator/internal/controller"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current builders")

// TestSamplesGolden renders the children of every sample in config/samples
// (and in its folders, such as etcd/) and compares them with
// testdata/<sample>.golden.yaml.
func TestSamplesGolden(t *testing.T) {
	samples, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inFolders, err := filepath.Glob("../../config/samples/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	samples = append(samples, inFolders...)
	n := 0
	for _, sample := range samples {
		if filepath.Base(sample) == "kustomization.yaml" {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(sample), ".yaml")
		t.Run(name, func(t *testing.T) {
			in, err := os.Open(sample)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var got bytes.Buffer
			if err := Render(&got, in, controller.Options{}); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `go test ./internal/preview -update` to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("children of %s differ from %s (-want +got):\n%s", sample, golden, diff)
			}
		})
	}
	if n == 0 {
		t.Fatal("no sample found in config/samples")
	}
}

func TestMainRejectsUnknownKind(t *testing.T) {
	var out, errOut bytes.Buffer
	in := strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	if code := Main([]string{"-f", "-"}, in, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "not a kind app-operator serves") {
		t.Errorf("stderr = %q", errOut.String())
	}
}

func TestMainRejectsUnknownField(t *testing.T) {
	var out, errOut bytes.Buffer
	in := strings.NewReader("apiVersion: app.example.com/v1\nkind: AppService\nmetadata:\n  name: x\nspec:\n  size: 1\n  image: nginx\n  sise: 2\n")
	if code := Main(nil, in, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "sise") {
		t.Errorf("exit code %d, stderr %q: want 1 and a message naming the unknown field", code, errOut.String())
	}
}
