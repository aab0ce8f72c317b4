package permissions

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestRequiredIsLeastPrivilege holds the generated role to the rules every
// install inherits: no wildcard, no escalate, bind or impersonate, and on
// Secrets only what the RedisEnterpriseCluster controller needs for the
// credentials it creates (never update or delete: a password is written
// once).
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
		if slices.Contains(r.Resources, "secrets") && slices.ContainsFunc(r.Verbs, func(v string) bool {
			return !slices.Contains([]string{"get", "list", "watch", "create", "patch"}, v)
		}) {
			t.Errorf("rule %+v grants more than get, list, watch, create and patch on Secrets", r)
		}
		for _, v := range []string{"escalate", "bind", "impersonate"} {
			if slices.Contains(r.Verbs, v) {
				t.Errorf("rule %+v grants %s", r, v)
			}
		}
	}
}

// TestRulesNameResourcesOfOneScope: the Helm chart splits the rules into a
// Role per watched namespace and a ClusterRole by a rule's first resource,
// which holds only if no rule mixes namespaced and cluster-scoped
// resources. The nodes and volumes are only ever read: the volumes one at
// a time, the nodes also listed and watched (whether one is cordoned).
func TestRulesNameResourcesOfOneScope(t *testing.T) {
	rules, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		needs := expand([]rbacv1.PolicyRule{r})
		for _, n := range needs {
			if n.clusterScoped() != needs[0].clusterScoped() {
				t.Errorf("rule %+v names namespaced and cluster-scoped resources", r)
			}
			if n.resource == "persistentvolumes" && n.verb != "get" {
				t.Errorf("rule %+v grants %s on %s, want get only", r, n.verb, n.resource)
			}
			if n.resource == "nodes" && !slices.Contains([]string{"get", "list", "watch"}, n.verb) {
				t.Errorf("rule %+v grants %s on %s, want reads only", r, n.verb, n.resource)
			}
		}
	}
}
