package console_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/console"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"

	"github.com/app-operator/app-operator/test/redisproto"
)

var (
	testCluster *cluster.Cluster
	k8s         client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunAgainstAPIServer(m, func(c *cluster.Cluster, kc client.Client) { testCluster, k8s = c, kc }))
}

// The login of the test clusters.
const (
	username = "admin@example.com"
	password = "s3cret-Pa55word"
)

// fakeNode is a Redis node that speaks RESP and answers AUTH and INFO,
// recording every command it receives.
type fakeNode struct {
	addr     string
	password string

	mu       sync.Mutex
	info     string
	commands []string
}

// newFakeNode listens on a port of its own until the test ends.
func newFakeNode(t *testing.T, password, info string, serverTLS *tls.Config) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if serverTLS != nil {
		ln = tls.NewListener(ln, serverTLS)
	}
	t.Cleanup(func() { _ = ln.Close() })
	n := &fakeNode{addr: ln.Addr().String(), password: password, info: info}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go n.serve(conn)
		}
	}()
	return n
}

// received returns the commands received, by name.
func (n *fakeNode) received() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.commands...)
}

func (n *fakeNode) serve(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	r := bufio.NewReader(conn)
	authed := false
	for {
		args, err := redisproto.ReadCommand(r)
		if err != nil {
			return
		}
		cmd := strings.ToUpper(args[0])
		n.mu.Lock()
		n.commands = append(n.commands, cmd)
		info := n.info
		n.mu.Unlock()
		var reply string
		switch {
		case cmd == "AUTH" && args[len(args)-1] == n.password:
			authed, reply = true, "+OK\r\n"
		case cmd == "AUTH":
			reply = "-WRONGPASS invalid username-password pair\r\n"
		case !authed:
			reply = "-NOAUTH Authentication required.\r\n"
		case cmd == "INFO":
			reply = "$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n"
		default:
			reply = "-ERR the fake node answers AUTH and INFO only\r\n"
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

// primaryInfo and replicaInfo are the INFO of a primary and of a replica
// at offset.
func primaryInfo(offset int64) string {
	return fmt.Sprintf("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_replid:abc\r\nmaster_repl_offset:%d\r\n"+
		"# Memory\r\nused_memory:2097152\r\nmaxmemory:805306368\r\n# Clients\r\nconnected_clients:7\r\n# Stats\r\ninstantaneous_ops_per_sec:1250\r\n", offset)
}

func replicaInfo(offset int64) string {
	return fmt.Sprintf("# Replication\r\nrole:slave\r\nmaster_host:c-0.c-nodes\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\n"+
		"master_replid:abc\r\nmaster_repl_offset:%d\r\n# Memory\r\nused_memory:1048576\r\nmaxmemory:805306368\r\n# Clients\r\nconnected_clients:2\r\n# Stats\r\ninstantaneous_ops_per_sec:3\r\n", offset)
}

// fixture is a RedisEnterpriseCluster of three nodes (node 0 the
// primary, node 1 a healthy replica, node 2 a replica that is not
// healthy), its Secret, fake nodes, and its console's servers.
type fixture struct {
	ns, name string
	server   *console.Server
	ui, api  *httptest.Server
	nodes    map[string]*fakeNode
	refresh  time.Duration

	logMu sync.Mutex
	log   strings.Builder
}

// logs returns what the console logged.
func (f *fixture) logs() string {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return f.log.String()
}

// options change a fixture.
type options struct {
	name           string
	backup         bool
	refresh        time.Duration
	sessionTTL     time.Duration
	credentialsTTL time.Duration
	// tls sets spec.tls, with the certificate the operator would issue
	// in the Secret <name>-tls, which the nodes serve.
	tls bool
	// ns is the namespace to use; a new one when "".
	ns string
}

// newFixture makes the cluster and starts its console, with a client
// that may do only what the console's Role grants.
func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{ns: o.ns, name: o.name, nodes: map[string]*fakeNode{}, refresh: cmp.Or(o.refresh, console.DefaultRefresh)}
	if f.ns == "" {
		f.ns = testenv.NewNamespace(t, k8s)
	}
	if f.name == "" {
		f.name = "c"
	}
	rec := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.name},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}}
	if o.backup {
		rec.Spec.Backup = &redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{
			S3: &redisv1alpha1.S3Storage{AWSSecretName: "aws", BucketName: "backups"}}}
	}
	var serverTLS *tls.Config
	var secrets []string
	if o.tls {
		rec.Spec.TLS = &redisv1alpha1.TLS{}
		serverTLS = nodeCertificate(t, f.ns, f.name)
		secrets = append(secrets, redisenterprisecluster.TLSSecretName(f.name, rec.Spec.TLS))
	}
	testenv.Create(t, k8s, rec)
	rec.Status = redisv1alpha1.RedisEnterpriseClusterStatus{
		State: redisv1alpha1.StateRunning, Primary: f.name + "-0",
		Nodes: []redisv1alpha1.NodeStatus{
			{Name: f.name + "-0", Role: redisv1alpha1.RolePrimary, Healthy: true},
			{Name: f.name + "-1", Role: redisv1alpha1.RoleReplica, Healthy: true},
			{Name: f.name + "-2", Role: redisv1alpha1.RoleReplica, Healthy: false},
		},
		Conditions: []metav1.Condition{{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: "Running", Message: "3 of 3 nodes ready", LastTransitionTime: metav1.Now()}},
	}
	if err := k8s.Status().Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.name},
		Data: map[string][]byte{"username": []byte(username), "password": []byte(password)}})
	f.nodes[f.name+"-0"] = newFakeNode(t, password, primaryInfo(5000), serverTLS)
	f.nodes[f.name+"-1"] = newFakeNode(t, password, replicaInfo(4900), serverTLS)
	f.nodes[f.name+"-2"] = newFakeNode(t, password, replicaInfo(1000), serverTLS)

	f.server = console.New(console.Config{
		Namespace: f.ns, Cluster: f.name, Client: consoleClient(t, f.ns, f.name, secrets...),
		Refresh: o.refresh, SessionTTL: o.sessionTTL, CredentialsTTL: o.credentialsTTL,
		NodeAddr: func(_ *redisv1alpha1.RedisEnterpriseCluster, pod string) string {
			if n := f.nodes[pod]; n != nil {
				return n.addr
			}
			return "127.0.0.1:1"
		},
		Log: funcr.New(func(prefix, args string) {
			f.logMu.Lock()
			defer f.logMu.Unlock()
			f.log.WriteString(prefix + " " + args + "\n")
			t.Log(prefix, args)
		}, funcr.Options{}),
	})
	f.ui = httptest.NewTLSServer(f.server.UI())
	t.Cleanup(f.ui.Close)
	f.api = httptest.NewTLSServer(f.server.API())
	t.Cleanup(f.api.Close)
	return f
}

// nodeCertificate issues the nodes' certificate into the Secret the
// operator would (<name>-tls, with its CA), and returns the TLS
// configuration the nodes serve it with, which asks for a client's
// certificate of the same CA.
func nodeCertificate(t *testing.T, ns, name string) *tls.Config {
	t.Helper()
	ca, err := pki.NewCA(name+"-ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(name, redisenterprisecluster.TLSHosts(name, ns), time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-tls"}, Data: pair.Data()})
	cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pair.CA)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// consoleClient is a client of the API server that may do what the
// console's Role grants in ns and nothing else: get and patch the
// RedisEnterpriseCluster name, get its Secret and the Secrets of
// secrets.
func consoleClient(t *testing.T, ns, name string, secrets ...string) client.Client {
	t.Helper()
	sa := "console-" + name
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	testenv.Create(t, k8s, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{redisv1alpha1.GroupVersion.Group}, Resources: []string{"redisenterpriseclusters"}, ResourceNames: []string{name}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: append([]string{name}, secrets...), Verbs: []string{"get"}},
	}})
	testenv.Create(t, k8s, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}})
	cfg := rest.CopyConfig(testCluster.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// browser is an HTTP client of the console that keeps cookies and does
// not follow redirects.
func (f *fixture) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := f.ui.Client()
	return &http.Client{Transport: hc.Transport, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login posts the login form and returns the answer.
func (f *fixture) login(t *testing.T, hc *http.Client, user, pass string) *http.Response {
	t.Helper()
	resp, err := hc.PostForm(f.ui.URL+"/login", url.Values{"username": {user}, "password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// loggedIn is a browser logged in, and the CSRF token of its session.
func (f *fixture) loggedIn(t *testing.T) (*http.Client, string) {
	t.Helper()
	hc := f.browser(t)
	if resp := f.login(t, hc, username, password); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %s to %q, want 303 to /", resp.Status, resp.Header.Get("Location"))
	}
	status, body := get(t, hc, f.ui.URL+"/")
	if status != http.StatusOK {
		t.Fatalf("GET / after login: %d", status)
	}
	m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return hc, m[1]
}

// get returns the status and body of GET u.
func get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// do sends a request with basic auth (when user is not empty) and
// returns its status and body.
func do(t *testing.T, hc *http.Client, method, u, user, pass, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cluster reads the fixture's resource back from the API server.
func (f *fixture) cluster(t *testing.T) *redisv1alpha1.RedisEnterpriseCluster {
	t.Helper()
	var o redisv1alpha1.RedisEnterpriseCluster
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: f.name}, &o); err != nil {
		t.Fatal(err)
	}
	return &o
}
