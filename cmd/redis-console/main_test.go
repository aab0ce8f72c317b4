package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	k8s         client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunAgainstAPIServer(m, func(c *cluster.Cluster, kc client.Client) { testCluster, k8s = c, kc }))
}

// freeAddr is a local address nobody listens at.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// The command, run as a ServiceAccount holding only the console's Role
// and given a certificate, serves the login page and the REST API over
// TLS with that certificate, and stops on SIGTERM.
func TestCommandServesTheConsoleAndTheAPIAsItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "redis-console")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}})
	testenv.Create(t, k8s, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Data: map[string][]byte{"username": []byte("u@example.com"), "password": []byte("p")}})
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r-ui"}})
	testenv.Create(t, k8s, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r-ui"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{redisv1alpha1.GroupVersion.Group}, Resources: []string{"redisenterpriseclusters"}, ResourceNames: []string{"r"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"r"}, Verbs: []string{"get"}},
	}})
	testenv.Create(t, k8s, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r-ui"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r-ui"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "r-ui"}}})
	sa, err := testCluster.ServiceAccountConfig(ctx, ns, "r-ui")
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: sa.Host, CertificateAuthorityData: sa.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: sa.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "c"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	ca, err := pki.NewCA("ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("r-ui", []string{"localhost", "127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, data := range map[string][]byte{certFile: pair.Cert, keyFile: pair.Key} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	uiAddr, apiAddr := freeAddr(t), freeAddr(t)
	var stderr strings.Builder
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfig, "--namespace="+ns, "--cluster=r", "--ui-address="+uiAddr, "--api-address="+apiAddr,
		"--tls-cert-file="+certFile, "--tls-key-file="+keyFile)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("redis-console's log:\n%s", stderr.String())
		}
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pair.CA)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(u string, auth bool) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return 0, "", err
		}
		if auth {
			req.SetBasicAuth("u@example.com", "p")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	uiURL := (&url.URL{Scheme: "https", Host: strings.Replace(uiAddr, "127.0.0.1", "localhost", 1)}).String()
	apiURL := (&url.URL{Scheme: "https", Host: strings.Replace(apiAddr, "127.0.0.1", "localhost", 1)}).String()
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		status, _, err := get(uiURL+"/login", false)
		return status == http.StatusOK, fmt.Sprintf("GET /login: %d %v", status, err)
	})
	if status, body, err := get(apiURL+"/v1/cluster", true); status != http.StatusOK || !strings.Contains(body, `"name": "r"`) {
		t.Errorf("GET /v1/cluster: %d %s %v, want 200 naming the cluster", status, body, err)
	}
	if status, _, err := get(apiURL+"/v1/cluster", false); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/cluster without credentials: %d %v, want 401", status, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("still running 10 s after SIGTERM")
	}
}
