// Command image builds the operator's container image without a container
// engine: one layer holding the static manager binary, run as a non-root
// user, with no shell and no package manager (what distroless "static:nonroot"
// gives, minus even its files). It writes an OCI image layout as a tar
// archive, which `podman load`, `skopeo copy oci-archive:...` and
// `crane push` accept.
//
//	go run ./hack/image --binary=bin/linux_amd64/manager --output=dist/app-operator.oci.tar --tag=app-operator:dev
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	flag.Parse()
	if *binary == "" {
		fmt.Fprintln(os.Stderr, "--binary is required")
		os.Exit(2)
	}
	if err := build(*binary, *output, *tag, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	fmt.Println("Wrote", *output)
}

func build(binary, output, tag, arch string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return binaryLayer(bin) },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	// A fixed date keeps the image digest reproducible.
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{EntrypointPath}
	cfg.Config.User = fmt.Sprintf("%d:%d", NonRootUID, NonRootUID)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": "app-operator"}
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

// binaryLayer is a tar stream with the binary at EntrypointPath, owned by
// root and not writable by the user the image runs as.
func binaryLayer(bin []byte) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{
			Name:     EntrypointPath[1:],
			Mode:     0o555,
			Size:     int64(len(bin)),
			Typeflag: tar.TypeReg,
			ModTime:  time.Unix(0, 0),
		})
		if err == nil {
			_, err = tw.Write(bin)
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
