package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/app-operator/app-operator/test/cluster"
)

// TestManagerBuildLinksNoTemplates checks that the manager, built with its
// tags, links no template package (one that calls methods by name makes
// the linker keep every exported method), and that the Makefile and the
// Dockerfile build it with those tags.
func TestManagerBuildLinksNoTemplates(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", cluster.ManagerBuildTags, "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, pkg := range []string{"text/template", "html/template", "golang.org/x/net/trace"} {
		if slices.Contains(deps, pkg) {
			t.Errorf("the manager built with tags %q links %s", cluster.ManagerBuildTags, pkg)
		}
	}

	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"Makefile":   "MANAGER_BUILD_TAGS = " + cluster.ManagerBuildTags + "\n",
		"Dockerfile": "go build -tags " + cluster.ManagerBuildTags + " ",
	} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s: want %q in it", file, want)
		}
	}
}

// TestManagerLinksNoGRPC checks that the manager links neither gRPC nor
// go-redis: it calls etcd through its JSON gateway (internal/etcd) and
// Redis through redigo (internal/redisnode), and either library would add
// megabytes to the executable, much of which stays resident.
func TestManagerLinksNoGRPC(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", cluster.ManagerBuildTags, "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "google.golang.org/grpc" || strings.HasPrefix(pkg, "github.com/redis/go-redis/") {
			t.Errorf("the manager links %s", pkg)
		}
	}
}
