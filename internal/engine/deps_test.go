package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// kindFree are the packages of this module the engine may import: none of
// them names a kind (a kind's API types, builders, status or clients).
var kindFree = map[string]bool{
	"api/conditions":       true,
	"api/placement":        true,
	"api/podsecurity":      true,
	"internal/applyschema": true,
	"internal/podhealth":   true,
	"internal/resources":   true,
	"internal/tlssecret":   true,
}

// TestEngineImportsNoKind fails when the engine, through any import, reaches
// a package of this module that is not kind-free: the engine knows kinds
// only through the Kind each one hands it.
func TestEngineImportsNoKind(t *testing.T) {
	const module = "github.com/app-operator/app-operator/"
	out, err := exec.Command("go", "list", "-deps", module+"internal/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		rel, ours := strings.CutPrefix(dep, module)
		if ours && rel != "internal/engine" && !kindFree[rel] {
			t.Errorf("the engine imports %s, which is not among the kind-free packages", rel)
		}
	}
}
