package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/app-operator/app-operator/test/cluster"
)

// TestImageReadBack builds the manager as `make image` does, packs it, reads
// the archive back as an OCI layout and checks what a cluster will run.
func TestImageReadBack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "manager")
	gobuild := exec.Command("go", "build", "-tags", cluster.ManagerBuildTags, "-trimpath", "-ldflags=-s -w", "-o", bin, "../../cmd/app-operator")
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("build the manager: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "image.oci.tar")
	if err := build(bin, nil, archive, "app-operator:test", "amd64"); err != nil {
		t.Fatal(err)
	}

	layoutDir := filepath.Join(dir, "layout")
	untar(t, archive, layoutDir)
	index, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatalf("read the OCI layout: %v", err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 || manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "app-operator:test" {
		t.Fatalf("index = %+v", manifest.Manifests)
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/manager" {
		t.Errorf("entrypoint = %q, want /manager", got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user = %q, want the non-root 65532:65532", cfg.Config.User)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform = %s/%s", cfg.OS, cfg.Architecture)
	}

	// The filesystem: the manager alone. No shell, nothing else to run.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	var manager []byte
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, hdr.Name)
			if hdr.Name == "manager" {
				if manager, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		rc.Close()
	}
	if strings.Join(files, ",") != "manager" {
		t.Errorf("image files = %v, want only the manager (no shell)", files)
	}
	exe, err := elf.NewFile(bytes.NewReader(manager))
	if err != nil {
		t.Fatalf("the manager in the image is not an ELF binary: %v", err)
	}
	for _, p := range exe.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the manager is dynamically linked; the image has no libc")
		}
	}
}

func untar(t *testing.T, archive, dst string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dst, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestContentImage builds an image of files alone, as the OLM bundle's and
// catalog's images are, and reads back its labels and files.
func TestContentImage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for p, data := range map[string]string{"a.yaml": "a: 1\n", "sub/b.yaml": "b: 2\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(dir, "image.oci.tar")
	if err := buildContent([]string{src + "=/configs"}, []string{"operators.operatorframework.io.index.configs.v1=/configs"}, archive, "catalog:test", "amd64"); err != nil {
		t.Fatal(err)
	}
	cfg, files := readImage(t, archive, filepath.Join(dir, "layout"), nil)
	if got := cfg.Config.Labels["operators.operatorframework.io.index.configs.v1"]; got != "/configs" {
		t.Errorf("labels = %v", cfg.Config.Labels)
	}
	want := map[string]string{"configs/": "", "configs/sub/": "", "configs/a.yaml": "a: 1\n", "configs/sub/b.yaml": "b: 2\n"}
	if !maps.Equal(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
}

// TestExtraBinary puts two more binaries beside the manager, as `make
// image` does with etcd-snapshot and redis-snapshot, and reads them all
// back with their modes; an --extra-binary at the manager's own path is
// refused.
func TestExtraBinary(t *testing.T) {
	dir := t.TempDir()
	manager, extra, second := filepath.Join(dir, "manager"), filepath.Join(dir, "etcd-snapshot"), filepath.Join(dir, "redis-snapshot")
	for path, content := range map[string]string{manager: "manager bytes", extra: "snapshot bytes", second: "redis bytes"} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(dir, "image.oci.tar")
	if err := build(manager, []string{extra + "=/etcd-snapshot", second + "=/redis-snapshot"}, archive, "app-operator:test", "amd64"); err != nil {
		t.Fatal(err)
	}
	cfg, files := readImage(t, archive, filepath.Join(dir, "layout"), func(hdr *tar.Header) {
		if hdr.Mode != 0o555 || hdr.Uid != 0 {
			t.Errorf("%s: mode %o uid %d, want 555 owned by root", hdr.Name, hdr.Mode, hdr.Uid)
		}
	})
	if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/manager" {
		t.Errorf("entrypoint = %q, want /manager", got)
	}
	want := map[string]string{"manager": "manager bytes", "etcd-snapshot": "snapshot bytes", "redis-snapshot": "redis bytes"}
	if !maps.Equal(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	if err := build(manager, []string{extra + "=/manager"}, archive, "app-operator:test", "amd64"); err == nil {
		t.Error("an extra binary at /manager was accepted")
	}
}

// readImage reads the image of archive back through an OCI layout in
// dir, and returns its config and its files' contents by path; each
// file's header goes to check first, when given.
func readImage(t *testing.T, archive, dir string, check func(*tar.Header)) (*v1.ConfigFile, map[string]string) {
	t.Helper()
	untar(t, archive, dir)
	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := index.Image(manifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if check != nil {
				check(hdr)
			}
			data, _ := io.ReadAll(tr)
			files[hdr.Name] = string(data)
		}
		rc.Close()
	}
	return cfg, files
}
