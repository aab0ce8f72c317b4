package v1alpha1

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The CRD's rules on spec.redisConfig list the parameters of the Go lists:
// the API refuses what the builder refuses.
func TestRedisConfigRulesHoldTheLists(t *testing.T) {
	src, err := os.ReadFile("redisconfig.go")
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(l, "// +kubebuilder:validation:XValidation:rule=") {
			rules = append(rules, l)
		}
	}
	if len(rules) != 2 {
		t.Fatalf("%d rules, want 2 (owned, known)", len(rules))
	}
	quoted := func(k string) string { return "'" + k + "'" }
	for _, k := range OwnedParameters {
		for _, r := range rules {
			if strings.Count(r, quoted(k)) != 2 {
				t.Errorf("%s: not in both expressions of a rule", k)
			}
		}
	}
	for _, k := range slices.Concat(LiveParameters, RestartParameters) {
		if strings.Count(rules[1], quoted(k)) != 2 || strings.Contains(rules[0], quoted(k)) {
			t.Errorf("%s: not among the known parameters of the second rule alone", k)
		}
	}
	for _, k := range LiveParameters {
		if slices.Contains(RestartParameters, k) || slices.Contains(OwnedParameters, k) {
			t.Errorf("%s is in two lists", k)
		}
	}
	// Every quoted name of the rules is in a list.
	all := slices.Concat(OwnedParameters, LiveParameters, RestartParameters, []string{"tls-"})
	for _, r := range rules {
		parts := strings.Split(r, "'")
		for i := 1; i < len(parts); i += 2 {
			if p := parts[i]; !slices.Contains(all, p) && !strings.HasPrefix(p, "spec.redisConfig.") && !strings.HasPrefix(p, ":") {
				t.Errorf("the rules name %q, in no list", p)
			}
		}
	}
}
