package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// ManagerEnv returns the Go runtime's environment variables
// config/manager/manager.yaml gives the manager's container a value in
// (GOGC and GOMEMLIMIT), as NAME=value: the benchmark and the demo run the
// manager binary as it is deployed.
func ManagerEnv() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		return nil, err
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			return nil, fmt.Errorf("config/manager/manager.yaml: %w", err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			var env []string
			for _, e := range c.Env {
				if e.ValueFrom == nil && strings.HasPrefix(e.Name, "GO") {
					env = append(env, e.Name+"="+e.Value)
				}
			}
			return env, nil
		}
	}
	return nil, fmt.Errorf("config/manager/manager.yaml: no Deployment with a manager container")
}
