package metricsauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/test/cluster"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	cluster.Run(m, cluster.Options{Profile: cluster.APIOnly}, func(c *cluster.Cluster) { testCluster = c })
}

// fixture is a metrics endpoint behind the filter, run as a ServiceAccount
// bound to the project's metrics-auth-role, and the tokens of a scraper
// bound to its metrics-reader role and of a ServiceAccount bound to
// nothing.
type fixture struct {
	admin    *kubernetes.Clientset
	server   *httptest.Server
	guard    *guard
	clock    *fakeClock
	scraper  string
	stranger string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metricsauth-"}}
	if ns, err = admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The project's own roles, each bound under a name of this test.
	for sa, file := range map[string]string{"manager": "metrics_auth_role.yaml", "scraper": "metrics_reader_role.yaml", "stranger": ""} {
		if _, err := admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if file == "" {
			continue
		}
		role := readRole(t, file)
		role.Name = ns.Name + "-" + sa
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: sa}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	token := func(sa string) *rest.Config {
		cfg, err := testCluster.ServiceAccountConfig(ctx, ns.Name, sa)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	manager := token("manager")
	hc, err := rest.HTTPClientFor(manager)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{admin: admin, clock: &fakeClock{now: time.Now()}, scraper: token("scraper").BearerToken, stranger: token("stranger").BearerToken}
	filter, err := Filter(manager, hc)
	if err != nil {
		t.Fatal(err)
	}
	// The guard behind the filter, with the test's clock; the filter
	// itself serves the requests.
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "the metrics")
	}))
	if err != nil {
		t.Fatal(err)
	}
	authn, authz := managerClients(t, manager)
	f.guard = newGuard(authn, authz)
	f.guard.now = f.clock.Now
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Through") == "guard" {
			code, msg, _ := f.guard.check(r.Context(), r)
			if code != http.StatusOK {
				http.Error(w, msg, code)
				return
			}
			_, _ = io.WriteString(w, "the metrics")
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.server.Close)
	return f
}

func readRole(t *testing.T, file string) *rbacv1.ClusterRole {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		t.Fatal(err)
	}
	return role
}

func managerClients(t *testing.T, cfg *rest.Config) (authenticationv1client.TokenReviewInterface, authorizationv1client.SubjectAccessReviewInterface) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews()
}

// get requests path with the given Authorization header (none when empty),
// through the filter or, with viaGuard, through the test's guard.
func (f *fixture) get(t *testing.T, method, path, auth string, viaGuard bool) int {
	t.Helper()
	req, err := http.NewRequest(method, f.server.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if viaGuard {
		req.Header.Set("X-Through", "guard")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK && string(body) != "the metrics" {
		t.Errorf("%s %s served %q", method, path, body)
	}
	return resp.StatusCode
}

// TestFilterAnswersAsTheAPIServerDecides checks every answer of the filter
// against a real API server: the manager's identity holds only the
// project's metrics-auth-role, the scraper's only its metrics-reader role.
func TestFilterAnswersAsTheAPIServerDecides(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"no token", "GET", "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", "GET", "/metrics", "Basic " + f.scraper, http.StatusUnauthorized},
		{"empty bearer token", "GET", "/metrics", "Bearer ", http.StatusUnauthorized},
		{"a token the API server does not know", "GET", "/metrics", "Bearer not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without the role", "GET", "/metrics", "Bearer " + f.stranger, http.StatusForbidden},
		{"the scraper", "GET", "/metrics", "Bearer " + f.scraper, http.StatusOK},
		{"the scraper, scheme in lower case", "GET", "/metrics", "bearer " + f.scraper, http.StatusOK},
		{"the scraper on another path", "GET", "/debug/pprof/", "Bearer " + f.scraper, http.StatusForbidden},
		{"the scraper with another verb", "POST", "/metrics", "Bearer " + f.scraper, http.StatusForbidden},
	} {
		if got := f.get(t, tc.method, tc.path, tc.auth, false); got != tc.want {
			t.Errorf("%s: %s %s answered %d, want %d", tc.name, tc.method, tc.path, got, tc.want)
		}
	}
}

// TestRevokedAccessEndsWithinAllowedFor removes the scraper's binding: its
// remembered access lasts until AllowedFor has passed, and not longer.
func TestRevokedAccessEndsWithinAllowedFor(t *testing.T) {
	f := newFixture(t)
	auth := "Bearer " + f.scraper
	if got := f.get(t, "GET", "/metrics", auth, true); got != http.StatusOK {
		t.Fatalf("the scraper got %d, want 200", got)
	}
	bindings, err := f.admin.RbacV1().ClusterRoleBindings().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == "scraper" {
				if err := f.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				removed++
			}
		}
	}
	if removed == 0 {
		t.Fatal("no binding of the scraper found")
	}
	f.clock.Advance(AllowedFor - time.Second)
	if got := f.get(t, "GET", "/metrics", auth, true); got != http.StatusOK {
		t.Errorf("within AllowedFor of the first answer the scraper got %d, want the remembered 200", got)
	}
	f.clock.Advance(2 * time.Second)
	// The API server's authorizer sees the binding go within a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := f.get(t, "GET", "/metrics", auth, true)
		if got == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after AllowedFor the revoked scraper still gets %d, want 403", got)
		}
		f.clock.Advance(AllowedFor)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRememberedAnswersAreBounded sends more distinct tokens than the guard
// keeps answers for: its map never holds more than its bound.
func TestRememberedAnswersAreBounded(t *testing.T) {
	f := newFixture(t)
	f.guard.max = 8
	for i := range 20 {
		if got := f.get(t, "GET", "/metrics", fmt.Sprintf("Bearer unknown-%d", i), true); got != http.StatusUnauthorized {
			t.Fatalf("unknown token %d answered %d, want 401", i, got)
		}
		f.guard.mu.Lock()
		n := len(f.guard.answers)
		f.guard.mu.Unlock()
		if n > f.guard.max {
			t.Fatalf("after %d tokens the guard keeps %d answers, above its bound %d", i+1, n, f.guard.max)
		}
	}
	// A refusal is remembered: the same unknown token again costs no
	// review, which would fail now, the API server being out of reach.
	unreachable, _ := managerClients(t, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "x", TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	f.guard.tokens = unreachable
	if got := f.get(t, "GET", "/metrics", "Bearer unknown-19", true); got != http.StatusUnauthorized {
		t.Errorf("a remembered refusal answered %d, want 401", got)
	}
	// Once forgotten, the API server is asked again; when it cannot answer,
	// the request fails with 500 and the failure is not remembered.
	f.clock.Advance(RefusedFor)
	if got := f.get(t, "GET", "/metrics", "Bearer unknown-19", true); got != http.StatusInternalServerError {
		t.Errorf("with the token review failing the guard answered %d, want 500", got)
	}
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
