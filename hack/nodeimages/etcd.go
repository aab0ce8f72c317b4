package main

// The etcd images of the EtcdCluster kind: quay.io/coreos/etcd:v<version>
// for each version below, each holding the static etcd server binary built
// from that version's own Go module (go.etcd.io/etcd/server/v3 at
// v<version>), so that the binary reports its real version, and one more
// of the control plane's etcd (--etcd), under the version it reports. An
// etcd version the Go module proxy does not serve (3.2.13, the seed's
// sample) gets no image: its pods report that the image cannot be pulled.

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// etcdVersions are the etcd versions built for the registry: two patches
// of 3.6, for a patch upgrade. The next minor, for a minor upgrade, is the
// control plane's etcd (--etcd), already built.
var etcdVersions = []string{"3.6.15", "3.6.16"}

// EtcdRepository is the repository of the etcd images (the EtcdCluster
// API's default).
const EtcdRepository = "quay.io/coreos/etcd"

var (
	etcdCache = flag.String("etcd-cache", "", "folder that caches the etcd server binaries, built when missing (default: a temporary folder)")
	etcdBuilt = flag.String("etcd", "", "an etcd server binary already built (the control plane's): an image of it too, tagged with the version it reports")
)

// etcdMain is the whole etcd command: the server module's own main.
const etcdMain = `package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

// withEtcd adds the etcd images to imgs.
func withEtcd(imgs []image, err error) ([]image, error) {
	if err != nil {
		return nil, err
	}
	dir := *etcdCache
	if dir == "" {
		if dir, err = os.MkdirTemp("", "etcd-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	if *etcdBuilt == "" {
		return nil, fmt.Errorf("--etcd is required: the control plane's etcd, the next minor's image")
	}
	v, err := etcdVersion(*etcdBuilt)
	if err != nil {
		return nil, err
	}
	bins := map[string]string{}
	for _, v := range etcdVersions {
		if bins[v], err = etcdBinary(dir, v); err != nil {
			return nil, err
		}
	}
	versions := etcdVersions
	if bins[v] == "" {
		bins[v] = *etcdBuilt
		versions = append(versions, v)
	}
	for _, v := range versions {
		bin := bins[v]
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, image{
			refs: []string{EtcdRepository + ":v" + v},
			files: map[string]file{
				"usr/local/bin/etcd": {mode: 0o555, content: string(data)},
				"tmp":                {dir: true, mode: 0o1777},
				"var/run/etcd":       {dir: true, mode: 0o777},
			},
			entrypoint: []string{"/usr/local/bin/etcd"},
			user:       "65532:65532",
			ports:      []string{"2379/tcp", "2380/tcp"},
		})
	}
	return imgs, nil
}

// etcdVersionLine is the line of `etcd --version` that names the server's
// version.
var etcdVersionLine = regexp.MustCompile(`(?m)^etcd Version: (\d+\.\d+\.\d+)$`)

// etcdVersion is the version the etcd binary bin reports.
func etcdVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := etcdVersionLine.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version names no version: %s", bin, out)
	}
	return string(m[1]), nil
}

// etcdBinary returns the cached etcd binary of version, building it first
// when the cache has none: a module of its own that requires the server
// module at that version, so every dependency is the one that version
// asks for.
func etcdBinary(dir, version string) (string, error) {
	bin := filepath.Join(dir, "etcd-v"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src, err := os.MkdirTemp("", "etcd-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	gomod := fmt.Sprintf("module etcdbuild\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n", version)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(etcdMain), 0o644); err != nil {
		return "", err
	}
	start := time.Now()
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "-trimpath", "-ldflags=-s -w", "-o", bin + ".tmp", "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("etcd %s: go %v: %v: %s", version, args, err, out)
		}
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", err
	}
	fmt.Printf("Built etcd %s in %s\n", version, time.Since(start).Round(time.Second))
	return bin, nil
}
