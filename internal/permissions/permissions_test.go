package permissions

import (
	"slices"
	"testing"
)

// TestRequiredIsLeastPrivilege holds the generated role to the rules every
// install inherits: no wildcard, no Secrets, no escalate, bind or impersonate.
func TestRequiredIsLeastPrivilege(t *testing.T) {
	rules, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatal("the embedded role has no rules")
	}
	for _, r := range rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			if slices.Contains(list, "*") {
				t.Errorf("wildcard in rule %+v", r)
			}
		}
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("rule %+v grants access to Secrets", r)
		}
		for _, v := range []string{"escalate", "bind", "impersonate"} {
			if slices.Contains(r.Verbs, v) {
				t.Errorf("rule %+v grants %s", r, v)
			}
		}
	}
}
