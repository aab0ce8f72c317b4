package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The real node's cgroups: the tree the kubelet and the pods run in, made in
// every mounted hierarchy, and its removal with whatever still runs in it.

// cgroupHierarchies are the mounted cgroup hierarchies (v1 controllers,
// and the v2 tree beside them).
func cgroupHierarchies() []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			dirs = append(dirs, fields[4])
		}
	}
	return dirs
}

// createCgroupRoot creates the node's cgroup tree in every v1 hierarchy,
// with each agent's kubelet cgroup root in it (the kubelet requires it to
// exist). A new cpuset cgroup starts with no CPUs or memory nodes: it gets
// its parent's.
func createCgroupRoot(agents []*agent) error {
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, "cgroup.controllers")); err == nil {
			continue // the v2 tree: runc creates what it needs there
		}
		dirs := []string{realNodeCgroup}
		for _, a := range agents {
			if a.cgroup != realNodeCgroup {
				dirs = append(dirs, a.cgroup)
			}
		}
		for _, d := range dirs {
			dir := filepath.Join(h, d)
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f)); err == nil {
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
						return fmt.Errorf("set %s of %s: %w", f, dir, err)
					}
				}
			}
		}
	}
	return nil
}

// killCgroupProcesses kills every process in the cgroup tree root (the
// node's, or one agent's in it): the pods' processes that outlived their
// runtime.
func killCgroupProcesses(root string) {
	for attempt := 0; attempt < 20; attempt++ {
		found := false
		for _, h := range cgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				if err != nil {
					return nil
				}
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroupRoot removes the node's cgroup tree from every hierarchy,
// innermost cgroups first.
func removeCgroupRoot() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, realNodeCgroup)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for try := 0; try < 20; try++ {
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
