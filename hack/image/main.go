// Command image builds the operator's container image without a container
// engine: one layer holding the static manager binary, run as a non-root
// user, with no shell and no package manager (what distroless "static:nonroot"
// gives, minus even its files). It writes an OCI image layout as a tar
// archive, which `podman load`, `skopeo copy oci-archive:...` and
// `crane push` accept.
//
//	go run ./hack/image --binary=bin/linux_amd64/manager --output=dist/app-operator.oci.tar --tag=app-operator:dev
//
// Each --extra-binary=SRC=/DEST puts another static binary beside the
// manager, such as the etcd-snapshot and redis-snapshot commands that the
// backup Jobs and the restore init containers run from the same image:
//
//	go run ./hack/image --binary=bin/linux_amd64/manager --extra-binary=bin/linux_amd64/etcd-snapshot=/etcd-snapshot \
//		--extra-binary=bin/linux_amd64/redis-snapshot=/redis-snapshot ...
//
// With --content instead of --binary it builds an image that only carries
// files, such as the OLM bundle's and catalog's images: each
// --content=SRC=DEST puts the files under the folder SRC at DEST, and each
// --label=KEY=VALUE labels the image.
//
//	go run ./hack/image --content=bundle/manifests=/manifests --content=bundle/metadata=/metadata \
//	  --label=operators.operatorframework.io.bundle.mediatype.v1=registry+v1 ... --tag=app-operator-bundle:v0.1.0
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUID is the user the image runs as (distroless's "nonroot").
const NonRootUID = 65532

// EntrypointPath is where the manager binary sits in the image.
const EntrypointPath = "/manager"

func main() {
	binary := flag.String("binary", "", "static linux manager binary to put in the image")
	output := flag.String("output", "dist/app-operator.oci.tar", "path of the OCI archive to write")
	tag := flag.String("tag", "app-operator:latest", "image reference recorded in the archive's index")
	arch := flag.String("arch", "amd64", "CPU architecture of the binary")
	var content, labels, extras listFlag
	flag.Var(&extras, "extra-binary", "SRC=/DEST: put the binary SRC at DEST in the image too, beside the manager (repeatable; with --binary)")
	flag.Var(&content, "content", "SRC=DEST: put the files under the folder SRC at DEST in the image (repeatable; instead of --binary)")
	flag.Var(&labels, "label", "KEY=VALUE: a label of the image (repeatable)")
	flag.Parse()
	if (*binary == "") == (len(content) == 0) {
		fmt.Fprintln(os.Stderr, "either --binary or --content is required")
		os.Exit(2)
	}
	if len(extras) > 0 && *binary == "" {
		fmt.Fprintln(os.Stderr, "--extra-binary goes with --binary")
		os.Exit(2)
	}
	var err error
	if *binary != "" {
		err = build(*binary, extras, *output, *tag, *arch)
	} else {
		err = buildContent(content, labels, *output, *tag, *arch)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	fmt.Println("Wrote", *output)
}

// build writes the manager's image: the manager binary at EntrypointPath
// and each of extras (SRC=/DEST) at its DEST.
func build(binary string, extras []string, output, tag, arch string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	files := []layerFile{{Path: EntrypointPath, Data: bin}}
	for _, e := range extras {
		src, dest, ok := strings.Cut(e, "=")
		if !ok || !strings.HasPrefix(dest, "/") || dest == EntrypointPath {
			return fmt.Errorf("--extra-binary=%s: want SRC=/DEST, DEST other than %s", e, EntrypointPath)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		files = append(files, layerFile{Path: path.Clean(dest), Data: data})
	}
	img, err := oneLayerImage(func() (io.ReadCloser, error) { return binaryLayer(files) })
	if err != nil {
		return err
	}
	return writeLayout(img, output, tag, arch, func(cfg *v1.Config) {
		cfg.Entrypoint = []string{EntrypointPath}
		cfg.User = fmt.Sprintf("%d:%d", NonRootUID, NonRootUID)
		cfg.WorkingDir = "/"
		cfg.Labels = map[string]string{"org.opencontainers.image.title": "app-operator"}
	})
}

// writeLayout sets the image's configuration and writes it, as the one
// image of an OCI layout, to the tar archive output.
func writeLayout(img v1.Image, output, tag, arch string, configure func(*v1.Config)) error {
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	// A fixed date keeps the image digest reproducible.
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	configure(&cfg.Config)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "app-operator-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	index := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Annotations: map[string]string{"org.opencontainers.image.ref.name": tag},
			Platform:    &v1.Platform{OS: "linux", Architecture: arch},
		},
	})
	if _, err := layout.Write(dir, index); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return err
	}
	return tarDir(dir, output)
}

// layerFile is one binary of the manager's image: its absolute path in the
// image and its content.
type layerFile struct {
	Path string
	Data []byte
}

// binaryLayer is a tar stream with the binaries at their paths, owned by
// root and not writable by the user the image runs as.
func binaryLayer(files []layerFile) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		var err error
		for _, f := range files {
			err = tw.WriteHeader(&tar.Header{
				Name:     f.Path[1:],
				Mode:     0o555,
				Size:     int64(len(f.Data)),
				Typeflag: tar.TypeReg,
				ModTime:  time.Unix(0, 0),
			})
			if err == nil {
				_, err = tw.Write(f.Data)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// tarDir writes the files under dir into a tar archive at output.
func tarDir(dir, output string) error {
	f, err := os.Create(output)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.ModTime = time.Unix(0, 0)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// buildContent builds an image of files alone: each SRC=DEST of content
// puts the regular files under the folder SRC at DEST, read-only and owned
// by root; labels are KEY=VALUE.
func buildContent(content, labels []string, output, tag, arch string) error {
	files := map[string][]byte{}
	for _, c := range content {
		src, dest, ok := strings.Cut(c, "=")
		if !ok || !strings.HasPrefix(dest, "/") {
			return fmt.Errorf("--content=%s: want SRC=/DEST", c)
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[path.Join(dest, filepath.ToSlash(rel))[1:]] = data
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("no file under %q", content)
	}
	labelMap := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("--label=%s: want KEY=VALUE", l)
		}
		labelMap[k] = v
	}
	img, err := oneLayerImage(func() (io.ReadCloser, error) { return filesLayer(files) })
	if err != nil {
		return err
	}
	return writeLayout(img, output, tag, arch, func(cfg *v1.Config) {
		cfg.Labels = labelMap
	})
}

// oneLayerImage is an OCI image of the one layer that open reads.
func oneLayerImage(open tarball.Opener) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
}

// filesLayer is a tar stream of files (by path, without the leading
// slash), in the order of their paths, with their folders.
func filesLayer(files map[string][]byte) (io.ReadCloser, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		dirs := map[string]bool{}
		var err error
		for _, p := range paths {
			for _, d := range parents(p) {
				if err == nil && !dirs[d] {
					dirs[d] = true
					err = tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)})
				}
			}
			if err == nil {
				err = tw.WriteHeader(&tar.Header{Name: p, Mode: 0o444, Size: int64(len(files[p])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
			}
			if err == nil {
				_, err = tw.Write(files[p])
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// parents are the folders above a path, outermost first.
func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}
