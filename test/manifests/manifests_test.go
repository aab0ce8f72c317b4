// Package manifests checks the two ways to install the operator, the
// kustomize tree under config/ and the Helm chart under charts/, against each
// other and against the least-privilege rules.
package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/app-operator/app-operator/internal/permissions"
	"github.com/app-operator/app-operator/test/cluster"
)

// render runs a command that prints a YAML stream and decodes it.
func render(t *testing.T, name string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("decode the output of %s: %v", name, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func kustomize(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return kustomizeOf(t, "config/default")
}

// kustomizeOf renders the kustomization in dir.
func kustomizeOf(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	return render(t, filepath.Join(bin, "kubectl"), "kustomize", dir)
}

func helm(t *testing.T, set ...string) []*unstructured.Unstructured {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		root, _ := cluster.RepoRoot()
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*"))
		if len(matches) == 0 {
			t.Fatal("helm not found: run `make helm` (or set HELM)")
		}
		bin = matches[len(matches)-1]
	}
	args := make([]string, 0, 5+2*len(set))
	args = append(args, "template", "app-operator", "charts/app-operator", "--namespace", "app-operator-system")
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return render(t, bin, args...)
}

func byKind(objs []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == kind {
			out[o.GetName()] = o
		}
	}
	return out
}

func rulesOf(t *testing.T, o *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
		t.Fatal(err)
	}
	return role.Rules
}

func TestChartAndKustomizeInstallTheSameCRDs(t *testing.T) {
	k, h := byKind(kustomize(t), "CustomResourceDefinition"), byKind(helm(t), "CustomResourceDefinition")
	if len(k) == 0 {
		t.Fatal("config/default renders no CRD")
	}
	if diff := cmp.Diff(sortedKeys(k), sortedKeys(h)); diff != "" {
		t.Fatalf("CRD names (-kustomize +helm):\n%s", diff)
	}
	for name := range k {
		if diff := cmp.Diff(k[name].Object["spec"], h[name].Object["spec"]); diff != "" {
			t.Errorf("CRD %s spec (-kustomize +helm):\n%s", name, diff)
		}
	}
}

func TestChartAndKustomizeGrantTheSameRules(t *testing.T) {
	k, h := kustomize(t), helm(t)
	for _, pair := range []struct{ kind, suffix string }{
		{"ClusterRole", "manager-role"},
		{"ClusterRole", "metrics-auth-role"},
		{"ClusterRole", "metrics-reader"},
		{"Role", "leader-election-role"},
	} {
		kr, hr := bySuffix(t, k, pair.kind, pair.suffix), bySuffix(t, h, pair.kind, pair.suffix)
		if diff := cmp.Diff(rulesOf(t, kr), rulesOf(t, hr)); diff != "" {
			t.Errorf("%s %s rules (-kustomize +helm):\n%s", pair.kind, pair.suffix, diff)
		}
	}
}

func TestChartAndKustomizeHardenTheManagerAlike(t *testing.T) {
	k := bySuffix(t, kustomize(t), "Deployment", "controller-manager")
	h := bySuffix(t, helm(t), "Deployment", "controller-manager")
	for _, path := range [][]string{
		{"spec", "template", "spec", "securityContext"},
		{"spec", "template", "spec", "containers"},
	} {
		kv, _, _ := unstructured.NestedFieldNoCopy(k.Object, path...)
		hv, _, _ := unstructured.NestedFieldNoCopy(h.Object, path...)
		if path[len(path)-1] == "containers" {
			kv, hv = hardening(kv), hardening(hv)
		}
		if diff := cmp.Diff(kv, hv); diff != "" {
			t.Errorf("%s (-kustomize +helm):\n%s", strings.Join(path, "."), diff)
		}
	}
}

// hardening keeps what decides how safely the manager runs, and the
// environment of its Go runtime (its garbage collection and memory limit).
// SNAPSHOT_IMAGE names each render's own image (see managerEnv).
func hardening(containers any) any {
	cs := containers.([]any)
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		m := c.(map[string]any)
		var env []any
		for _, e := range m["env"].([]any) {
			if e.(map[string]any)["name"] != "SNAPSHOT_IMAGE" {
				env = append(env, e)
			}
		}
		out = append(out, map[string]any{
			"securityContext": m["securityContext"], "livenessProbe": m["livenessProbe"],
			"readinessProbe": m["readinessProbe"], "resources": m["resources"],
			"env": env,
		})
	}
	return out
}

// TestLeastPrivilege counts, in both renders and in the namespaced variant,
// the rules no install of this operator may carry.
func TestLeastPrivilege(t *testing.T) {
	for name, objs := range map[string][]*unstructured.Unstructured{
		"kustomize":            kustomize(t),
		"helm":                 helm(t),
		"helm watchNamespaces": helm(t, "watchNamespaces={team-a,team-b}"),
	} {
		var wildcards, secrets, dangerous []string
		for _, o := range objs {
			if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
				continue
			}
			for _, r := range rulesOf(t, o) {
				where := fmt.Sprintf("%s %s %+v", o.GetKind(), o.GetName(), r)
				for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.NonResourceURLs} {
					for _, v := range list {
						if v == "*" {
							wildcards = append(wildcards, where)
						}
					}
				}
				// Secrets: only what the RedisEnterpriseCluster controller
				// needs for the credentials it creates.
				for _, res := range r.Resources {
					if res == "secrets" && slices.ContainsFunc(r.Verbs, func(v string) bool {
						return !slices.Contains([]string{"get", "list", "watch", "create", "patch"}, v)
					}) {
						secrets = append(secrets, where)
					}
				}
				for _, v := range r.Verbs {
					if v == "escalate" || v == "bind" || v == "impersonate" {
						dangerous = append(dangerous, where)
					}
				}
			}
		}
		if len(wildcards)+len(secrets)+len(dangerous) != 0 {
			t.Errorf("%s: %d wildcard rules %v, %d Secret rules beyond get, list, watch, create, patch %v, %d escalate/bind/impersonate rules %v",
				name, len(wildcards), wildcards, len(secrets), secrets, len(dangerous), dangerous)
		}
	}
}

func TestWatchNamespacesUsesRolesOnly(t *testing.T) {
	objs := helm(t, "watchNamespaces={team-a,team-b}")
	if _, ok := byKind(objs, "ClusterRole")["app-operator-manager-role"]; ok {
		t.Error("with watchNamespaces the chart still grants the manager a ClusterRole")
	}
	var namespaces []string
	for _, o := range objs {
		if o.GetKind() == "Role" && strings.HasSuffix(o.GetName(), "manager-role") {
			namespaces = append(namespaces, o.GetNamespace())
		}
	}
	sort.Strings(namespaces)
	if diff := cmp.Diff([]string{"team-a", "team-b"}, namespaces); diff != "" {
		t.Errorf("namespaces of the manager Roles (-want +got):\n%s", diff)
	}
	// The cluster-wide grants: reading the watched Namespaces, by name, so
	// that the start-up check can tell a deleted one, and the manager's
	// rules on cluster-scoped resources, which no Role can grant.
	required, err := permissions.Required()
	if err != nil {
		t.Fatal(err)
	}
	_, clusterRules := permissions.SplitByScope(required)
	want := append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"team-a", "team-b"}, Verbs: []string{"get"}}}, clusterRules...)
	if len(clusterRules) == 0 {
		t.Fatal("the manager's rules name no cluster-scoped resource: this test checks nothing of them")
	}
	for _, o := range objs {
		if o.GetKind() == "Role" && strings.HasSuffix(o.GetName(), "manager-role") {
			if _, c := permissions.SplitByScope(rulesOf(t, o)); len(c) > 0 {
				t.Errorf("Role %s/%s grants cluster-scoped resources, which a Role cannot: %+v", o.GetNamespace(), o.GetName(), c)
			}
		}
	}
	if diff := cmp.Diff(want, rulesOf(t, bySuffix(t, objs, "ClusterRole", "watched-namespaces"))); diff != "" {
		t.Errorf("rules of the watched-namespaces ClusterRole (-want +got):\n%s", diff)
	}
	dep := bySuffix(t, objs, "Deployment", "controller-manager")
	args, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(args), "--watch-namespaces=team-a,team-b") {
		t.Errorf("the manager is not told which namespaces to watch: %v", args)
	}
}

func bySuffix(t *testing.T, objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			return o
		}
	}
	t.Fatalf("no %s named *%s", kind, suffix)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartFlagsExistInTheManager renders the chart with every value that
// becomes a flag and checks that the manager defines each flag, so a typo
// in a template cannot crash-loop an install.
func TestChartFlagsExistInTheManager(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-tags", cluster.ManagerBuildTags, "-o", bin, "./cmd/app-operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the manager: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "--help").CombinedOutput()

	dep := bySuffix(t, helm(t,
		"watchNamespaces={a}", "extraArgs={--zap-log-level=debug}",
		"microServiceDeploy.baseDomain=apps.example.com", "microServiceDeploy.ingressClass=nginx",
		"microServiceDeploy.authURL=https://auth.example.com/check",
	), "Deployment", "controller-manager")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if len(args) < 10 {
		t.Fatalf("the chart renders only %d args: %v", len(args), args)
	}
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.Contains(string(help), "  -"+name+" ") && !strings.Contains(string(help), "  -"+name+"\n") {
			t.Errorf("the chart passes --%s, which the manager does not define", name)
		}
	}
}

// managerEnv returns the environment of the manager container of the
// rendered objects, by name, and its memory limit. SNAPSHOT_IMAGE, which
// must name the container's own image, is checked and left out.
func managerEnv(t *testing.T, objs []*unstructured.Unstructured) (map[string]string, *resource.Quantity) {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(bySuffix(t, objs, "Deployment", "controller-manager").Object, dep); err != nil {
		t.Fatal(err)
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name != "manager" {
			continue
		}
		env := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Errorf("env %s comes from elsewhere; want a value", e.Name)
			}
			env[e.Name] = e.Value
		}
		if env["SNAPSHOT_IMAGE"] != c.Image {
			t.Errorf("SNAPSHOT_IMAGE %q, want the manager's own image %q", env["SNAPSHOT_IMAGE"], c.Image)
		}
		delete(env, "SNAPSHOT_IMAGE")
		var limit *resource.Quantity
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			limit = &q
		}
		return env, limit
	}
	t.Fatal("no manager container")
	return nil, nil
}

// goMemLimitBytes reads a GOMEMLIMIT value in whole MiB, as both renders
// write it.
func goMemLimitBytes(t *testing.T, v string) int64 {
	t.Helper()
	mib, err := strconv.ParseInt(strings.TrimSuffix(v, "MiB"), 10, 64)
	if err != nil || !strings.HasSuffix(v, "MiB") {
		t.Fatalf("GOMEMLIMIT %q: want a whole number of MiB", v)
	}
	return mib << 20
}

// TestGoRuntimeEnvironment checks that both renders give the manager the
// same GOGC and a GOMEMLIMIT a tenth below its memory limit, and that the
// chart follows its values.
func TestGoRuntimeEnvironment(t *testing.T) {
	kEnv, kLimit := managerEnv(t, kustomize(t))
	hEnv, hLimit := managerEnv(t, helm(t))
	if diff := cmp.Diff(kEnv, hEnv); diff != "" {
		t.Errorf("manager environment (-kustomize +helm):\n%s", diff)
	}
	if kEnv["GOGC"] != "30" {
		t.Errorf("GOGC %q, want 30", kEnv["GOGC"])
	}
	for name, r := range map[string]struct {
		env   map[string]string
		limit *resource.Quantity
	}{"kustomize": {kEnv, kLimit}, "helm": {hEnv, hLimit}} {
		if r.limit == nil {
			t.Fatalf("%s: no memory limit", name)
		}
		got, want := goMemLimitBytes(t, r.env["GOMEMLIMIT"]), r.limit.Value()*9/10
		// Whole MiB, rounded down.
		if got > want || got <= want-(1<<20) {
			t.Errorf("%s: GOMEMLIMIT %s for a memory limit of %s, want 90 %% of it (%d bytes) in whole MiB", name, r.env["GOMEMLIMIT"], r.limit, want)
		}
	}

	for _, tc := range []struct {
		set                 []string
		wantGOGC, wantLimit string // "" for absent
	}{
		{[]string{"resources.limits.memory=1Gi"}, "30", "921MiB"},
		{[]string{"resources.limits.memory=500M"}, "30", "429MiB"},
		{[]string{"resources.limits.memory=268435456"}, "30", "230MiB"},
		{[]string{"resources.limits.memory=1Gi", "goRuntime.memoryLimitPercent=75"}, "30", "768MiB"},
		{[]string{"resources.limits.memory=null"}, "30", ""},
		{[]string{"goRuntime.memoryLimitPercent=0"}, "30", ""},
		{[]string{"goRuntime.gcPercent=100"}, "100", "230MiB"},
	} {
		env, _ := managerEnv(t, helm(t, tc.set...))
		if env["GOGC"] != tc.wantGOGC || env["GOMEMLIMIT"] != tc.wantLimit {
			t.Errorf("--set %v: GOGC %q, GOMEMLIMIT %q; want %q, %q", tc.set, env["GOGC"], env["GOMEMLIMIT"], tc.wantGOGC, tc.wantLimit)
		}
	}
}

// TestMakeRunUsesTheManagerEnvironment checks that `make run` gives the
// manager the Go runtime settings of its Deployment.
func TestMakeRunUsesTheManagerEnvironment(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env, err := cluster.ManagerEnv()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "run")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n run: %v", err)
	}
	var runLine string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "app-operator --") {
			runLine = l
		}
	}
	fields := strings.Fields(runLine)
	if len(fields) == 0 || fields[0] != "env" {
		t.Fatalf("make run runs %q: want env NAME=value... bin/app-operator", runLine)
	}
	for _, e := range env {
		if !slices.Contains(fields, e) {
			t.Errorf("make run runs %q, without %s", runLine, e)
		}
	}
}
