package cluster

import (
	"strings"
	"testing"
)

func TestManagerEnvReadsTheGoRuntimeSettings(t *testing.T) {
	env, err := ManagerEnv()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || value == "" {
			t.Errorf("%q is not NAME=value", e)
		}
		names[name] = true
	}
	for _, want := range []string{"GOGC", "GOMEMLIMIT"} {
		if !names[want] {
			t.Errorf("the manager's environment %v has no %s", env, want)
		}
	}
}
