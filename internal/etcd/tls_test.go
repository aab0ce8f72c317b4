package etcd_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// TestGatewayWithTLSAnswersOnlyClientsWithACertificate runs a real etcd
// member with client TLS and client-certificate authentication, as a
// member of a cluster with spec.TLS runs: the operator's client, with a
// certificate of the member's CA and the client Service's name checked,
// lists and changes the membership; a client without a certificate, one
// with a certificate of another CA, a plain-HTTP client, and a client that
// expects another name are all refused before any call.
func TestGatewayWithTLSAnswersOnlyClientsWithACertificate(t *testing.T) {
	const serverName = "example-client.ns.svc"
	ca, err := pki.NewCA("etcd-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue("example", []string{serverName, "127.0.0.1"}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := ca.Issue("app-operator", nil, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range server.Data() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := tlssecret.ClientConfig(operator.Cert, operator.Key, operator.CA, serverName)
	if err != nil {
		t.Fatal(err)
	}
	dialer := etcd.NewTLSDialer(cfg)
	defer dialer.Close()
	endpoint := startEtcdWith(t, "https", dialer.Dial,
		"--cert-file="+filepath.Join(dir, "tls.crt"), "--key-file="+filepath.Join(dir, "tls.key"),
		"--trusted-ca-file="+filepath.Join(dir, "ca.crt"), "--client-cert-auth")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := dialer.Dial(ctx, []string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	list, err := cli.MemberList(ctx)
	if err != nil || len(list.Members) != 1 {
		t.Fatalf("member list %+v, %v: want m0", list, err)
	}
	learner, err := cli.AddMember(ctx, "https://127.0.0.1:1", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RemoveMember(ctx, learner.ID); err != nil {
		t.Fatal(err)
	}

	other, err := pki.NewCA("other-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Issue("stranger", nil, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// What a client without the operator's certificate holds.
	noCert := cfg.Clone()
	noCert.Certificates = nil
	strangerCfg, err := tlssecret.ClientConfig(stranger.Cert, stranger.Key, operator.CA, serverName)
	if err != nil {
		t.Fatal(err)
	}
	// Sent even though the member names another CA as the one it wants.
	strangerCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &strangerCfg.Certificates[0], nil
	}
	wrongName := cfg.Clone()
	wrongName.ServerName = "other-client.ns.svc"
	for name, c := range map[string]struct {
		dial     etcd.Dialer
		endpoint string
		// refusal is in the error of a client the member refused, or
		// that refused the member.
		refusal string
	}{
		"no client certificate":                       {etcd.NewTLSDialer(noCert).Dial, endpoint, "certificate required"},
		"a certificate of another CA":                 {etcd.NewTLSDialer(strangerCfg).Dial, endpoint, "remote error: tls: "},
		"plain HTTP":                                  {etcd.Dial, strings.Replace(endpoint, "https://", "http://", 1), ""},
		"a member certificate not valid for the name": {etcd.NewTLSDialer(wrongName).Dial, endpoint, "not other-client.ns.svc"},
	} {
		t.Run(name, func(t *testing.T) {
			cli, err := c.dial(ctx, []string{c.endpoint})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.MemberList(ctx); err == nil || !strings.Contains(err.Error(), c.refusal) {
				t.Errorf("member list: %v, want a refusal (%q)", err, c.refusal)
			}
			if _, err := cli.AddMember(ctx, "https://127.0.0.1:2", false); err == nil {
				t.Error("a member was added")
			}
		})
	}
	if list, err := cli.MemberList(ctx); err != nil || len(list.Members) != 1 {
		t.Fatalf("member list %+v, %v: want m0 alone", list, err)
	}
}
