package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A run folder reached through a symbolic link still loses its mounts: the
// kernel lists them under the folder's real path (as the kubelet's bind
// mount of its root folder is listed).
func TestUnmountUnderFollowsSymbolicLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	point := filepath.Join(real, "run", "kubelet")
	if err := os.MkdirAll(point, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(point, point, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(point, syscall.MNT_DETACH) })
	if err := unmountUnder(filepath.Join(link, "run")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), " "+point+" ") {
		t.Errorf("%s is still mounted after unmountUnder(%s)", point, filepath.Join(link, "run"))
	}
}
