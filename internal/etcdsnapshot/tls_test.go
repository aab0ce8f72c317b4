package etcdsnapshot

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/app-operator/app-operator/internal/pki"
)

// A member with client TLS and client-certificate authentication, as a
// member of an EtcdCluster with spec.TLS: save with --tls-dir (the
// mounted client Secret) stores the snapshot; without it, or with a
// certificate of another CA, it is refused and stores nothing.
func TestSaveFromAMemberWithTLSPresentsTheClientCertificate(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA("etcd-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(p pki.Pair) string {
		dir := t.TempDir()
		for name, data := range p.Data() {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	issue := func(ca *pki.CA, cn string, hosts ...string) pki.Pair {
		p, err := ca.Issue(cn, hosts, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverDir := write(issue(ca, "member", "127.0.0.1"))
	cfg := etcdConfig(t, "tls", t.TempDir())
	client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ClientTLSInfo = transport.TLSInfo{CertFile: filepath.Join(serverDir, "tls.crt"), KeyFile: filepath.Join(serverDir, "tls.key"),
		TrustedCAFile: filepath.Join(serverDir, "ca.crt"), ClientCertAuth: true}
	src := startEtcd(t, cfg, true)

	stranger := issue(other, "stranger")
	stranger.CA = ca.PEM // trusts the member, presents another CA's certificate
	for _, tt := range []struct {
		name   string
		tlsDir string
		ok     bool
	}{
		{"the client certificate", write(issue(ca, "app-operator")), true},
		{"no --tls-dir", "", false},
		{"a certificate of another CA", write(stranger), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			backupDir := t.TempDir()
			args := []string{"save", "--endpoints=" + src.clientURL, "--to=" + filepath.Join(backupDir, "cluster"), "--timeout=20s",
				"--result-file=" + filepath.Join(t.TempDir(), "result.json")}
			if tt.tlsDir != "" {
				args = append(args, "--tls-dir="+tt.tlsDir)
			}
			var stdout, stderr bytes.Buffer
			code := Main(args, &stdout, &stderr)
			stored, _ := filepath.Glob(filepath.Join(backupDir, "cluster_*"))
			if (code == 0) != tt.ok || (len(stored) == 1) != tt.ok {
				t.Errorf("exit %d, stored %v, want stored: %v (%s %s)", code, stored, tt.ok, stdout.String(), stderr.String())
			}
		})
	}
}
