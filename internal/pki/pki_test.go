package pki

import (
	"crypto/tls"
	"crypto/x509"
	"maps"
	"testing"
	"time"
)

func TestCurrentTellsACertificateToKeepFromOneToIssueAnew(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ca, err := NewCA("ca", now, 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other", now, 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"b.ns.svc", "a.ns.svc"}
	issue := func(ca *CA, cn string, hosts []string, validity time.Duration) map[string][]byte {
		p, err := ca.Issue(cn, hosts, now, validity)
		if err != nil {
			t.Fatal(err)
		}
		return p.Data()
	}
	fresh := issue(ca, "r", hosts, 90*24*time.Hour)
	mismatched := maps.Clone(fresh)
	mismatched["tls.key"] = issue(ca, "r", hosts, 90*24*time.Hour)["tls.key"]
	oldCA := maps.Clone(fresh)
	oldCA["ca.crt"] = other.PEM
	for _, tt := range []struct {
		name string
		data map[string][]byte
		at   time.Time
		want bool
	}{
		{"a certificate just issued is kept", fresh, now, true},
		{"the same hosts in another order are the same hosts", issue(ca, "r", []string{"a.ns.svc", "b.ns.svc"}, 90*24*time.Hour), now, true},
		{"a certificate 59 days before it expires is kept", fresh, now.Add(31 * 24 * time.Hour), true},
		{"a certificate 29 days before it expires is issued anew", fresh, now.Add(61 * 24 * time.Hour), false},
		{"a certificate for other hosts is issued anew", issue(ca, "r", []string{"a.ns.svc"}, 90*24*time.Hour), now, false},
		{"a certificate of another common name is issued anew", issue(ca, "s", hosts, 90*24*time.Hour), now, false},
		{"a certificate another CA signed is issued anew", issue(other, "r", hosts, 90*24*time.Hour), now, false},
		{"a ca.crt other than the CA's is written anew", oldCA, now, false},
		{"a key that is not the certificate's is issued anew", mismatched, now, false},
		{"nothing is issued", map[string][]byte{}, now, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ca.Current(tt.data, "r", hosts, tt.at, 30*24*time.Hour); got != tt.want {
				t.Errorf("Current = %v, want %v", got, tt.want)
			}
		})
	}

	// What it issues serves: the pair loads, and the chain verifies
	// against ca.crt for each host, for both usages.
	pair, err := tls.X509KeyPair(fresh["tls.crt"], fresh["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(fresh["ca.crt"])
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "a.ns.svc", Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
	}
	loaded, err := LoadCA(ca.PEM, ca.KeyPEM)
	if err != nil || !loaded.Current(fresh, "r", hosts, now, 0) {
		t.Errorf("the CA loaded from its PEM (%v) does not own what it issued", err)
	}
	if _, err := LoadCA(fresh["tls.crt"], fresh["tls.key"]); err == nil {
		t.Error("a leaf certificate loaded as a CA")
	}
}
