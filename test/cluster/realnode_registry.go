package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The real node's image registry, and the images pushed to it at the start.

func (n *realNode) startRegistry(ctx context.Context, addr string) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "logs"), 0o755); err != nil {
		return err
	}
	config := filepath.Join(n.dir, "registry.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
`, filepath.Join(n.dir, "registry"), addr)), 0o644); err != nil {
		return err
	}
	if err := n.run("registry", "serve", config); err != nil {
		return err
	}
	return n.poll(ctx, 30*time.Second, "registry at "+addr, func() error { return answersOK("http://" + addr + "/v2/") })
}

// pushImages copies every image of the OCI layout at dir to the registry at
// addr, under its reference's repository and tag: docker.io/library/nginx:1.7.9
// becomes addr/library/nginx:1.7.9, which containerd finds through its
// mirror configuration.
func pushImages(ctx context.Context, dir, addr string) error {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, desc := range manifest.Manifests {
		ref, err := name.ParseReference(desc.Annotations["org.opencontainers.image.ref.name"])
		if err != nil {
			return err
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return err
		}
		if err := writeImage(ctx, img, ref, addr); err != nil {
			return err
		}
	}
	return nil
}
