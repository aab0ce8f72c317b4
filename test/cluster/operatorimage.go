package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildOperatorImage builds, as `make image` does, the manager, the
// etcd and Redis snapshot tools and the Redis console for linux/amd64 and the operator's image of
// them, tagged ref, into dir, and returns the image archive's path (for
// PushImageArchive). root is the repository's root.
func BuildOperatorImage(root, dir, ref string) (string, error) {
	manager := filepath.Join(dir, "manager")
	etcdTool, redisTool := filepath.Join(dir, "etcd-snapshot"), filepath.Join(dir, "redis-snapshot")
	redisConsole := filepath.Join(dir, "redis-console")
	for _, b := range []struct {
		out  string
		args []string
	}{
		{manager, []string{"-tags", ManagerBuildTags, "./cmd/app-operator"}},
		{etcdTool, []string{"./cmd/etcd-snapshot"}},
		{redisTool, []string{"./cmd/redis-snapshot"}},
		{redisConsole, []string{"./cmd/redis-console"}},
	} {
		args := append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", b.out}, b.args...)
		build := exec.Command("go", args...)
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	archive := filepath.Join(dir, "app-operator.oci.tar")
	image := exec.Command("go", "run", "./hack/image", "--binary="+manager, "--extra-binary="+etcdTool+"=/etcd-snapshot", "--extra-binary="+redisTool+"=/redis-snapshot",
		"--extra-binary="+redisConsole+"=/redis-console", "--arch=amd64",
		"--tag="+ref, "--output="+archive)
	image.Dir = root
	if out, err := image.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/image: %w\n%s", err, out)
	}
	return archive, nil
}
