package cluster

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushImageArchive pushes the image of an OCI image layout archived as a
// tar (what `make image` writes) to the RealPods profile's registry under
// ref: app-operator:dev is then pulled by a pod that names
// app-operator:dev, as from docker.io.
func (c *Cluster) PushImageArchive(ctx context.Context, archive, ref string) error {
	if c.node == nil || c.node.registry == "" {
		return errors.New("the cluster has no image registry: only the RealPods profile has one")
	}
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := untar(archive, dir); err != nil {
		return fmt.Errorf("unpack %s: %w", archive, err)
	}
	return pushImage(ctx, dir, ref, c.node.registry)
}

// untar unpacks the regular files and folders of the tar archive at path
// into dir.
func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("%s leaves the archive's folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// pushImage pushes the one image of the OCI layout at dir to the registry
// at addr as ref (a reference as a pod names it: app-operator:dev is
// addr/library/app-operator:dev).
func pushImage(ctx context.Context, dir, ref, addr string) error {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(manifest.Manifests) != 1 {
		return fmt.Errorf("%d images in the archive, want one", len(manifest.Manifests))
	}
	img, err := idx.Image(manifest.Manifests[0].Digest)
	if err != nil {
		return err
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	return writeImage(ctx, img, parsed, addr)
}

// writeImage pushes img to the registry at addr under ref's repository and
// tag.
func writeImage(ctx context.Context, img v1.Image, ref name.Reference, addr string) error {
	target, err := name.NewTag(addr+"/"+ref.Context().RepositoryStr()+":"+ref.Identifier(), name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(target, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s: %w", target, err)
	}
	return nil
}
