package permissions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requests counts the requests a client sends, by kind, and can fail the
// first ones as if the API server refused connections.
type requests struct {
	mu                                      sync.Mutex
	rulesReviews, accessReviews, namespaces int
	failFirst                               int // -1: fail every request
	failed                                  int
}

func (r *requests) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rulesReviews, r.accessReviews, r.namespaces, r.failed = 0, 0, 0, 0
}

func (r *requests) counts() (rules, access, namespaces, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rulesReviews, r.accessReviews, r.namespaces, r.failed
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// client returns a clientset for cfg whose requests r counts.
func (r *requests) client(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 100
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			r.mu.Lock()
			if r.failFirst < 0 || r.failed < r.failFirst {
				r.failed++
				r.mu.Unlock()
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			switch {
			case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/selfsubjectrulesreviews"):
				r.rulesReviews++
			case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/selfsubjectaccessreviews"):
				r.accessReviews++
			case req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/api/v1/namespaces/"):
				r.namespaces++
			}
			r.mu.Unlock()
			return next.RoundTrip(req)
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// serviceAccountConfig creates the ServiceAccount default/name and returns a
// configuration that authenticates as it.
func serviceAccountConfig(t *testing.T, name string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	if _, err := adminClient(t).CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := testCluster.ServiceAccountConfig(ctx, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// grant binds the rules to subject: cluster-wide with no namespace,
// otherwise through a Role and RoleBinding there.
func grant(t *testing.T, name string, subject rbacv1.Subject, namespace string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	admin := adminClient(t)
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	var err error
	if namespace == "" {
		if _, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   []rbacv1.Subject{subject},
			}, metav1.CreateOptions{})
		}
	} else {
		if _, err = admin.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = admin.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   []rbacv1.Subject{subject},
			}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func saSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: "default"}
}

func requiredRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	rules, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// eventually retries check for a few seconds: RBAC changes reach the
// authorizer through a watch.
func eventually(t *testing.T, check func() (bool, string)) {
	t.Helper()
	var msg string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var ok bool
		if ok, msg = check(); ok {
			return
		}
	}
	t.Fatal(msg)
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := adminClient(t).CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckSendsOneReviewPerNamespace counts the reviews a check sends: one
// SelfSubjectRulesReview for a cluster-wide operator, one per watched
// namespace otherwise, and nothing else when every rule is granted (through
// the required rules themselves, or through wildcards).
func TestCheckSendsOneReviewPerNamespace(t *testing.T) {
	ctx := context.Background()
	rules := requiredRules(t)
	for _, tc := range []struct {
		name  string
		rules []rbacv1.PolicyRule
	}{
		{"counted-required", rules},
		{"counted-wildcards", []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grant(t, tc.name, saSubject(tc.name), "", tc.rules)
			var r requests
			cs := r.client(t, serviceAccountConfig(t, tc.name))
			eventually(t, func() (bool, string) {
				res, err := Check(ctx, cs, nil)
				return err == nil && len(res.Missing) == 0, "not every rule granted yet: " + strings.Join(res.Missing, ", ")
			})

			for _, namespaces := range [][]string{nil, {"default", "kube-system", "kube-public"}} {
				r.reset()
				res, err := Check(ctx, cs, namespaces)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Missing)+len(res.AbsentNamespaces) != 0 {
					t.Errorf("namespaces %v: %+v, want nothing missing", namespaces, res)
				}
				rulesReviews, accessReviews, nsGets, _ := r.counts()
				// One per namespace, and one cluster-wide for the
				// cluster-scoped resources.
				want := len(namespaces) + 1
				if rulesReviews != want || accessReviews != 0 || nsGets != 0 {
					t.Errorf("namespaces %v: %d rules reviews, %d access reviews, %d namespace reads; want %d, 0, 0",
						namespaces, rulesReviews, accessReviews, nsGets, want)
				}
			}
		})
	}
}

// TestCheckIsClusterWideOnlyThroughClusterRoleBindings grants every rule in
// one namespace only: a cluster-wide operator lacks them all, an operator
// watching that namespace lacks none.
func TestCheckIsClusterWideOnlyThroughClusterRoleBindings(t *testing.T) {
	ctx := context.Background()
	rules := requiredRules(t)
	createNamespace(t, "only-here")
	namespaced, cluster := SplitByScope(rules)
	grant(t, "only-here", saSubject("only-here"), "only-here", namespaced)
	grant(t, "only-here-cluster-scoped", saSubject("only-here"), "", cluster)
	var r requests
	cs := r.client(t, serviceAccountConfig(t, "only-here"))
	eventually(t, func() (bool, string) {
		res, err := Check(ctx, cs, []string{"only-here"})
		return err == nil && len(res.Missing) == 0, "not every rule granted yet: " + strings.Join(res.Missing, ", ")
	})
	res, err := Check(ctx, cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(res.Missing), len(expand(namespaced)); got != want {
		t.Errorf("cluster-wide, %d rules missing, want all %d: %v", got, want, res.Missing)
	}
}

// TestCheckAsksAboutUnlistedRules runs the check as a node, whose
// authorizer cannot list its rules (the review says incomplete) yet lets
// nodes read Services: every rule the review does not prove gets a
// SelfSubjectAccessReview of its own, and only those, so that reading
// Services is not reported missing.
func TestCheckAsksAboutUnlistedRules(t *testing.T) {
	ctx := context.Background()
	rules := requiredRules(t)
	const node = "system:node:check-node"
	grant(t, "check-node", rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: node}, "", rules[1:])
	cfg := testCluster.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: node, Groups: []string{"system:nodes", "system:authenticated"}}
	var r requests
	cs := r.client(t, cfg)

	unlisted := expand(rules[:1])
	var want []string
	for _, n := range unlisted {
		if n.resource == "services" && (n.verb == "get" || n.verb == "list" || n.verb == "watch") {
			continue // the node authorizer allows these
		}
		want = append(want, describe(n, "default"))
	}
	sort.Strings(want)
	eventually(t, func() (bool, string) {
		r.reset()
		res, err := Check(ctx, cs, []string{"default"})
		if err != nil {
			return false, err.Error()
		}
		if d := cmp.Diff(want, res.Missing); d != "" {
			return false, "missing (-want +got):\n" + d
		}
		// The grant reaches the rules review and the access reviews
		// through the API server's RBAC cache: a pass that listed the
		// rules before the grant arrived asks about those too, so the
		// count is only checked on a pass that saw the grant throughout.
		// One rules review in the namespace, one cluster-wide for the
		// cluster-scoped resources.
		rulesReviews, accessReviews, _, _ := r.counts()
		return rulesReviews == 2 && accessReviews == len(unlisted),
			fmt.Sprintf("%d rules reviews and %d access reviews, want 2 and %d", rulesReviews, accessReviews, len(unlisted))
	})
}

// TestCheckWarnsAboutAbsentNamespaces installs the operator as the chart does
// with watchNamespaces (a Role and RoleBinding in each namespace, and get on
// those Namespaces), then loses one namespace with its RoleBinding and
// watches one that never existed: both come back as absent, not as missing
// permissions, and not as an error. An identity that may not read the
// Namespaces cannot tell, and gets the rules reported missing.
func TestCheckWarnsAboutAbsentNamespaces(t *testing.T) {
	ctx := context.Background()
	admin := adminClient(t)
	rules := requiredRules(t)
	watched := []string{"team-a", "team-gone", "team-never"}
	createNamespace(t, "team-a")
	createNamespace(t, "team-gone")
	namespaced, cluster := SplitByScope(rules)
	for _, sa := range []string{"namespaced", "namespaced-blind"} {
		grant(t, sa, saSubject(sa), "team-a", namespaced)
		grant(t, sa, saSubject(sa), "team-gone", namespaced)
		grant(t, sa+"-cluster-scoped", saSubject(sa), "", cluster)
	}
	grant(t, "namespaced-watched-namespaces", saSubject("namespaced"), "", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}, ResourceNames: watched},
	})
	var r, blindRequests requests
	cs := r.client(t, serviceAccountConfig(t, "namespaced"))
	blind := blindRequests.client(t, serviceAccountConfig(t, "namespaced-blind"))
	eventually(t, func() (bool, string) {
		res, err := Check(ctx, cs, watched[:2])
		return err == nil && len(res.Missing) == 0, "not every rule granted yet: " + strings.Join(res.Missing, ", ")
	})

	// Without a namespace controller the namespace stays Terminating: the
	// check must not wait for it to go.
	for _, sa := range []string{"namespaced", "namespaced-blind"} {
		if err := admin.RbacV1().RoleBindings("team-gone").Delete(ctx, sa, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.CoreV1().Namespaces().Delete(ctx, "team-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := Result{AbsentNamespaces: []string{"team-gone", "team-never"}}
	eventually(t, func() (bool, string) {
		res, err := Check(ctx, cs, watched)
		if err != nil {
			return false, err.Error()
		}
		return cmp.Diff(want, res) == "", "result (-want +got):\n" + cmp.Diff(want, res)
	})

	res, err := Check(ctx, blind, watched)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AbsentNamespaces) != 0 || len(res.Missing) != 2*len(expand(namespaced)) {
		t.Errorf("without get on namespaces: %d absent namespaces and %d rules missing, want 0 and %d", len(res.AbsentNamespaces), len(res.Missing), 2*len(expand(namespaced)))
	}
}

// TestCheckRetriesUntilTheDeadline refuses the first connections of a check,
// which then succeeds; refuses them all, and the check gives up when its
// context ends, naming the last error; and gives up at once on an error
// that retrying cannot fix.
func TestCheckRetriesUntilTheDeadline(t *testing.T) {
	t.Run("transient", func(t *testing.T) {
		r := requests{failFirst: 3}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := Check(ctx, r.client(t, testCluster.Config()), []string{"default", "kube-system"}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, failed := r.counts(); failed != 3 {
			t.Errorf("%d requests refused, want 3", failed)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		r := requests{failFirst: -1}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		_, err := Check(ctx, r.client(t, testCluster.Config()), nil)
		took := time.Since(start)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v, want the deadline and the refused connection", err)
		}
		if _, _, _, failed := r.counts(); failed < 3 {
			t.Errorf("%d attempts, want retries", failed)
		}
		// The retries may stop a little before the deadline when the next
		// wait would pass it; what matters is that the check does not outlive it.
		if took > 5*time.Second {
			t.Errorf("gave up after %s, want by the 3s deadline", took)
		}
		t.Logf("gave up after %s (deadline 3s)", took)
	})

	t.Run("rejected", func(t *testing.T) {
		cfg := testCluster.Config()
		cfg.BearerToken = "not-a-token"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := Check(ctx, adminClientFor(t, cfg), nil)
		if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("err = %v, want Unauthorized", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("gave up after %s, want at once", took)
		}
	})
}

func adminClientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
