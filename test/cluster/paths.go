package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

const modulePath = "github.com/app-operator/app-operator"

// BinDirEnv overrides the folder the control-plane binaries are read from.
const BinDirEnv = "APP_OPERATOR_CONTROLPLANE"

// DefaultBinDir is the folder `make controlplane` builds into:
// bin/controlplane/k8s-<version>_kwok-<version>, with both versions read from
// hack/controlplane/go.mod, which pins them.
func DefaultBinDir() (string, error) {
	return pinnedBinDir(BinDirEnv, "controlplane",
		pin{"k8s", "hack/controlplane/go.mod", "k8s.io/kubernetes"},
		pin{"kwok", "hack/controlplane/go.mod", "sigs.k8s.io/kwok"})
}

// pin is a module whose pinned version names a folder of built binaries.
type pin struct{ label, goMod, module string }

// pinnedBinDir is the folder the environment variable env names, else
// bin/<folder>/<label>-<version>_... of the pins, in order, with each
// version read from the go.mod (relative to the repository) that pins it.
func pinnedBinDir(env, folder string, pins ...pin) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(pins))
	for _, p := range pins {
		v, err := pinnedVersion(filepath.Join(root, p.goMod), p.module)
		if err != nil {
			return "", err
		}
		parts = append(parts, p.label+"-"+v)
	}
	return filepath.Join(root, "bin", folder, strings.Join(parts, "_")), nil
}

// RepoRoot walks up from the working directory to the folder whose go.mod
// declares this module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	want := regexp.MustCompile(`(?m)^module ` + regexp.QuoteMeta(modulePath) + `\s*$`)
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && want.Match(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoRepo
		}
		dir = parent
	}
}

func pinnedVersion(goMod, module string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(v\S+)`).FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s does not pin %s", goMod, module)
	}
	return string(m[1]), nil
}

// newRunDir creates a fresh run folder under bin/runs (or the system temp
// folder outside the repository).
func newRunDir() (string, error) {
	base := os.TempDir()
	if root, err := RepoRoot(); err == nil {
		base = filepath.Join(root, "bin", "runs")
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(base, "cluster-")
}
