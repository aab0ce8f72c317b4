package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/console"
	"github.com/app-operator/app-operator/test/testenv"
)

// A wrong password is refused and starts no session; without a session
// the page sends to the login page and the overview and the actions are
// refused.
func TestConsoleRefusesAWrongPasswordAndRequestsWithoutASession(t *testing.T) {
	f := newFixture(t, options{backup: true})
	hc := f.browser(t)
	resp := f.login(t, hc, username, wrongPassword)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong password: %s, want 401", resp.Status)
	}
	resp = f.login(t, hc, "someone-else", password)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong username: %s, want 401", resp.Status)
	}
	u, _ := url.Parse(f.ui.URL)
	if cookies := hc.Jar.Cookies(u); len(cookies) != 0 {
		t.Errorf("a refused login set cookies %v", cookies)
	}
	if r, err := hc.Get(f.ui.URL + "/"); err != nil || r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/login" {
		t.Errorf("GET / without a session: %v %v, want 303 to /login", r.Status, err)
	}
	if status, _ := get(t, hc, f.ui.URL+"/overview"); status != http.StatusUnauthorized {
		t.Errorf("GET /overview without a session: %d, want 401", status)
	}
	if status, _ := do(t, hc, http.MethodPost, f.ui.URL+"/actions/backup", "", "", "", nil); status != http.StatusUnauthorized {
		t.Errorf("POST /actions/backup without a session: %d, want 401", status)
	}
	if _, ok := f.cluster(t).Annotations[redisv1alpha1.BackupNowAnnotation]; ok {
		t.Error("a request without a session annotated the cluster")
	}
	// The login page, its assets and the readiness probe's path need no
	// session.
	for _, path := range []string{"/login", "/static/app.js", "/static/style.css", "/healthz"} {
		if status, _ := get(t, hc, f.ui.URL+path); status != http.StatusOK {
			t.Errorf("GET %s without a session: %d, want 200", path, status)
		}
	}
}

// The right login starts a session in a cookie that scripts cannot read,
// sent over TLS alone, to this site alone; the answers forbid frames,
// other origins' scripts and caching; logging out ends the session.
func TestConsoleSessionCookieHeadersAndLogout(t *testing.T) {
	f := newFixture(t, options{})
	hc := f.browser(t)
	resp := f.login(t, hc, username, password)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == console.SessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("no session cookie in %v", resp.Header)
	}
	if !cookie.HttpOnly || !cookie.Secure || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || len(cookie.Value) < 43 {
		t.Errorf("session cookie %+v, want HttpOnly, Secure, SameSite=Strict, Path=/, 32 random bytes", cookie)
	}
	if strings.Contains(resp.Header.Get("Location"), password) {
		t.Error("the password is in the redirect")
	}
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q, want default-src 'self'", csp)
	}
	// A GET never logs in.
	if status, _ := get(t, f.browser(t), f.ui.URL+"/login?username="+username+"&password="+password); status != http.StatusOK {
		t.Errorf("GET /login with a password in the URL: %d, want the login page", status)
	}

	hc, token := f.loggedIn(t)
	if status, _ := do(t, hc, http.MethodPost, f.ui.URL+"/logout", "", "", "", nil); status != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d, want 403", status)
	}
	if status, _ := do(t, hc, http.MethodPost, f.ui.URL+"/logout", "", "", "csrf="+token,
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); status != http.StatusSeeOther {
		t.Errorf("logout: %d, want 303", status)
	}
	if status, _ := get(t, hc, f.ui.URL+"/overview"); status != http.StatusUnauthorized {
		t.Errorf("GET /overview after logout: %d, want 401", status)
	}
}

// A session is kept in the memory of the console that started it: the
// console of another cluster does not know it, even with the same
// password, and refuses it.
func TestConsoleRefusesASessionOfAnotherClustersConsole(t *testing.T) {
	a := newFixture(t, options{name: "a"})
	b := newFixture(t, options{name: "b", ns: a.ns})
	hc, _ := b.loggedIn(t)
	bu, _ := url.Parse(b.ui.URL)
	var session string
	for _, c := range hc.Jar.Cookies(bu) {
		if c.Name == console.SessionCookie {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatal("no session at b")
	}
	for _, path := range []string{"/", "/overview"} {
		status, _ := do(t, a.browser(t), http.MethodGet, a.ui.URL+path, "", "", "", map[string]string{"Cookie": console.SessionCookie + "=" + session})
		if status == http.StatusOK {
			t.Errorf("GET %s at a with b's session: 200, want refused", path)
		}
	}
	if status, _ := get(t, hc, b.ui.URL+"/overview"); status != http.StatusOK {
		t.Errorf("GET /overview at b with b's session: %d, want 200", status)
	}
}

// A session ends after the session TTL unused.
func TestConsoleSessionExpiresWhenIdle(t *testing.T) {
	f := newFixture(t, options{sessionTTL: 500 * time.Millisecond})
	hc, _ := f.loggedIn(t)
	if status, _ := get(t, hc, f.ui.URL+"/overview"); status != http.StatusOK {
		t.Fatalf("GET /overview in a fresh session: %d", status)
	}
	time.Sleep(700 * time.Millisecond)
	if status, _ := get(t, hc, f.ui.URL+"/overview"); status != http.StatusUnauthorized {
		t.Errorf("GET /overview after the session TTL: %d, want 401", status)
	}
}

// After five failed logins from one address, every login from it is
// refused, the right one too, on the console and on the REST API.
func TestConsoleLocksOutAfterFiveFailures(t *testing.T) {
	f := newFixture(t, options{})
	hc := f.browser(t)
	for i := range console.MaxFailures {
		if resp := f.login(t, hc, username, wrongPassword); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %s, want 401", i+1, resp.Status)
		}
	}
	if resp := f.login(t, hc, username, password); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right password after %d failures: %s, want 429", console.MaxFailures, resp.Status)
	}
	if status, _ := do(t, f.api.Client(), http.MethodGet, f.api.URL+"/v1/cluster", username, password, "", nil); status != http.StatusTooManyRequests {
		t.Errorf("the REST API with the right password from a locked-out address: %d, want 429", status)
	}
	logs := f.logs()
	if !strings.Contains(logs, "Login failed") || !strings.Contains(logs, "locked out") || !strings.Contains(logs, "127.0.0.1") {
		t.Errorf("the log does not say logins failed and the client was locked out, from where:\n%s", logs)
	}
	if strings.Contains(logs, wrongPassword) || strings.Contains(logs, password) {
		t.Errorf("a password is in the log:\n%s", logs)
	}
}

// wrongPassword is a password the tests try, and look for in the logs.
const wrongPassword = "Wr0ng-Pa55word-tried"

// A password rotated in the Secret applies once the credentials are
// read again.
func TestConsoleAppliesARotatedPassword(t *testing.T) {
	f := newFixture(t, options{credentialsTTL: 200 * time.Millisecond})
	if resp := f.login(t, f.browser(t), username, password); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", resp.Status)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.name}}
	testenv.Update(t, k8s, secret, func(s *corev1.Secret) { s.Data["password"] = []byte("rotated") })
	time.Sleep(300 * time.Millisecond)
	if resp := f.login(t, f.browser(t), username, password); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old password after the rotation: %s, want 401", resp.Status)
	}
	if resp := f.login(t, f.browser(t), username, "rotated"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the new password: %s, want 303", resp.Status)
	}
}

// "Back up now" writes the annotation app-operator/backup, with the
// session's CSRF token only; a cluster without spec.backup refuses it
// without writing anything.
func TestConsoleBackupButtonAnnotatesTheCluster(t *testing.T) {
	f := newFixture(t, options{backup: true})
	hc, token := f.loggedIn(t)
	if status, _ := do(t, hc, http.MethodPost, f.ui.URL+"/actions/backup", "", "", "", nil); status != http.StatusForbidden {
		t.Errorf("backup without the CSRF token: %d, want 403", status)
	}
	status, body := do(t, hc, http.MethodPost, f.ui.URL+"/actions/backup", "", "", "", map[string]string{console.CSRFHeader: token})
	if status != http.StatusAccepted {
		t.Fatalf("backup: %d %s, want 202", status, body)
	}
	var res console.Result
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	got := f.cluster(t).Annotations[redisv1alpha1.BackupNowAnnotation]
	if !strings.HasPrefix(got, "console-") || got != res.Request {
		t.Errorf("annotation %s = %q, want the request %q", redisv1alpha1.BackupNowAnnotation, got, res.Request)
	}

	off := newFixture(t, options{})
	hc, token = off.loggedIn(t)
	if status, body := do(t, hc, http.MethodPost, off.ui.URL+"/actions/backup", "", "", "", map[string]string{console.CSRFHeader: token}); status != http.StatusConflict || !strings.Contains(body, "spec.backup") {
		t.Errorf("backup without spec.backup: %d %s, want 409 naming spec.backup", status, body)
	}
	if _, ok := off.cluster(t).Annotations[redisv1alpha1.BackupNowAnnotation]; ok {
		t.Error("a refused backup annotated the cluster")
	}
}

// A switchover goes to a healthy replica in sync: one that is not, or
// the primary, is refused without writing anything.
func TestConsoleSwitchoverRefusesANodeNotInSync(t *testing.T) {
	f := newFixture(t, options{})
	hc, token := f.loggedIn(t)
	post := func(node string) (int, string) {
		return do(t, hc, http.MethodPost, f.ui.URL+"/actions/switchover", "", "", url.Values{"node": {node}}.Encode(),
			map[string]string{console.CSRFHeader: token, "Content-Type": "application/x-www-form-urlencoded"})
	}
	for _, node := range []string{"c-2", "c-0", "c-7"} {
		if status, body := post(node); status != http.StatusConflict {
			t.Errorf("switchover to %s: %d %s, want 409", node, status, body)
		}
	}
	if _, ok := f.cluster(t).Annotations[switchover.Annotation]; ok {
		t.Fatal("a refused switchover annotated the cluster")
	}
	if status, body := post("c-1"); status != http.StatusAccepted {
		t.Fatalf("switchover to c-1: %d %s, want 202", status, body)
	}
	if got := f.cluster(t).Annotations[switchover.Annotation]; !strings.HasPrefix(got, "c-1/console-") {
		t.Errorf("annotation %s = %q, want c-1/console-<id>", switchover.Annotation, got)
	}
}

// overview reads the overview as the page does.
func overview(t *testing.T, f *fixture, hc *http.Client) console.Overview {
	t.Helper()
	status, body := get(t, hc, f.ui.URL+"/overview")
	if status != http.StatusOK {
		t.Fatalf("GET /overview: %d %s", status, body)
	}
	var ov console.Overview
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	return ov
}

// The overview shows a failover (status.primary changed, with its
// history) within one refresh interval, and the nodes' figures from INFO.
func TestConsoleOverviewReflectsAFailoverWithinOneRefresh(t *testing.T) {
	refresh := time.Second
	f := newFixture(t, options{refresh: refresh})
	hc, _ := f.loggedIn(t)
	ov := overview(t, f, hc)
	if ov.Primary != "c-0" || len(ov.Nodes) != 3 {
		t.Fatalf("overview: primary %q, %d nodes; want c-0, 3", ov.Primary, len(ov.Nodes))
	}
	if n := ov.Nodes[1]; !n.Answered || n.OpsPerSec != 3 || n.LagBytes == nil || *n.LagBytes != 100 || n.LagSeconds == nil || *n.LagSeconds != 1 {
		t.Errorf("node c-1: %+v, want its INFO: 3 ops/s, 100 bytes and 1 s behind", n)
	}

	rec := f.cluster(t)
	rec.Status.Primary = "c-1"
	rec.Status.Nodes[0].Role, rec.Status.Nodes[0].Healthy = redisv1alpha1.RoleUnknown, false
	rec.Status.Nodes[1].Role = redisv1alpha1.RolePrimary
	rec.Status.PrimaryHistory = []redisv1alpha1.PrimaryChange{{From: "c-0", To: "c-1", Reason: "Failover", Time: metav1.Now()}}
	if err := k8s.Status().Update(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	for ov = overview(t, f, hc); ov.Primary != "c-1" && time.Since(changed) < refresh; ov = overview(t, f, hc) {
		time.Sleep(100 * time.Millisecond)
	}
	if ov.Primary != "c-1" || len(ov.History) != 1 || ov.History[0].Reason != "Failover" {
		t.Errorf("%s after the failover: primary %q, history %+v; want c-1 and the failover", refresh, ov.Primary, ov.History)
	}
}

// The console sends the nodes INFO and nothing else (after AUTH), and at
// most once per node per refresh interval however often it is asked.
func TestConsoleSendsOnlyINFOOncePerRefresh(t *testing.T) {
	f := newFixture(t, options{refresh: time.Hour})
	hc, _ := f.loggedIn(t)
	for range 5 {
		overview(t, f, hc)
	}
	if status, _ := do(t, f.api.Client(), http.MethodGet, f.api.URL+"/v1/nodes", username, password, "", nil); status != http.StatusOK {
		t.Errorf("GET /v1/nodes: %d", status)
	}
	for name, n := range f.nodes {
		if got := strings.Join(n.received(), " "); got != "AUTH INFO" {
			t.Errorf("%s received %q, want one AUTH INFO", name, got)
		}
	}
}

// The console reads nothing its Role does not grant: its client cannot
// read another Secret.
func TestConsoleClientIsLimitedToItsCluster(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	c := consoleClient(t, ns, "c")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "other"}, &corev1.Secret{}); err == nil {
		t.Error("the console's client read another Secret")
	}
}

// With spec.tls, the console reaches the nodes over TLS, trusting the CA
// of their Secret and presenting its certificate: nodes that serve TLS
// alone and ask for a client's certificate answer.
func TestConsoleReadsINFOOverTLSWithSpecTLS(t *testing.T) {
	f := newFixture(t, options{tls: true})
	hc, _ := f.loggedIn(t)
	for _, n := range overview(t, f, hc).Nodes {
		if !n.Answered {
			t.Errorf("node %s did not answer over TLS: %s", n.Name, n.Error)
		}
	}
}
