package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildOperatorImage builds, as `make image` does, the manager and the
// etcd snapshot tool for linux/amd64 and the operator's image of both,
// tagged ref, into dir, and returns the image archive's path (for
// PushImageArchive). root is the repository's root.
func BuildOperatorImage(root, dir, ref string) (string, error) {
	manager, tool := filepath.Join(dir, "manager"), filepath.Join(dir, "etcd-snapshot")
	for _, b := range []struct {
		out  string
		args []string
	}{
		{manager, []string{"-tags", ManagerBuildTags, "./cmd/app-operator"}},
		{tool, []string{"./cmd/etcd-snapshot"}},
	} {
		args := append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", b.out}, b.args...)
		build := exec.Command("go", args...)
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	archive := filepath.Join(dir, "app-operator.oci.tar")
	image := exec.Command("go", "run", "./hack/image", "--binary="+manager, "--extra-binary="+tool+"=/etcd-snapshot", "--arch=amd64",
		"--tag="+ref, "--output="+archive)
	image.Dir = root
	if out, err := image.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/image: %w\n%s", err, out)
	}
	return archive, nil
}
