package tlssecret_test

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"

	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func certsOf(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	cas, err := tlssecret.CAs(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return cas
}

func leafOf(t *testing.T, ca *pki.CA) *x509.Certificate {
	t.Helper()
	pair, err := ca.Issue("node", []string{"r.ns.svc"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tlssecret.Leaf(pair.Data())
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// A CA is its public key: a CA certificate renewed with its key is the
// same CA (what it signed before, it still verifies), and a CA of another
// key is another, whatever its name.
func TestCAsAreComparedByPublicKey(t *testing.T) {
	old := newCA(t, "redis-ca")
	renewed, err := old.Renewed(time.Now().Add(time.Minute), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sameName := newCA(t, "redis-ca")
	if bytes.Equal(old.PEM, renewed.PEM) {
		t.Fatal("the renewed CA's certificate is the old one's")
	}
	oldCert, renewedCert, otherCert := certsOf(t, old.PEM)[0], certsOf(t, renewed.PEM)[0], certsOf(t, sameName.PEM)[0]
	if !tlssecret.SameCA(oldCert, renewedCert) {
		t.Error("a CA renewed with its key is not the same CA")
	}
	if tlssecret.SameCA(oldCert, otherCert) {
		t.Error("a CA of another key, of the same name, is the same CA")
	}
	if got := tlssecret.OtherCAs([]*x509.Certificate{oldCert}, []*x509.Certificate{renewedCert}); len(got) != 0 {
		t.Errorf("OtherCAs(old, renewed) = %d CAs, want none", len(got))
	}
	if got := tlssecret.OtherCAs([]*x509.Certificate{oldCert, renewedCert, otherCert}, []*x509.Certificate{renewedCert}); len(got) != 1 || got[0] != otherCert {
		t.Errorf("OtherCAs(old, renewed, other; renewed) = %d CAs, want the other alone", len(got))
	}
	leaf := leafOf(t, old)
	if !tlssecret.IssuedBy(leaf, []*x509.Certificate{otherCert, renewedCert}) {
		t.Error("a certificate of the old CA is not issued by the CA renewed with its key")
	}
	if tlssecret.IssuedBy(leaf, []*x509.Certificate{otherCert}) {
		t.Error("a certificate is issued by a CA of another key")
	}
	// The pool of both verifies what either signed.
	pool := tlssecret.Pool([]*x509.Certificate{otherCert, renewedCert})
	for name, l := range map[string]*x509.Certificate{"old": leaf, "other": leafOf(t, sameName)} {
		if _, err := l.Verify(x509.VerifyOptions{Roots: pool, DNSName: "r.ns.svc"}); err != nil {
			t.Errorf("a certificate of the %s CA against the pool of both: %v", name, err)
		}
	}
}

// A ca.crt holds one CA or more; blocks of another type are skipped, and
// Bundle writes back what CAs read.
func TestCAsOfABundle(t *testing.T) {
	a, b := newCA(t, "a"), newCA(t, "b")
	bundle := append(append(append([]byte{}, a.PEM...), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"...), b.PEM...)
	cas := certsOf(t, bundle)
	if len(cas) != 2 || cas[0].Subject.CommonName != "a" || cas[1].Subject.CommonName != "b" {
		t.Fatalf("CAs of a bundle of a, a key and b: %d", len(cas))
	}
	if got := tlssecret.Bundle(cas); !bytes.Equal(got, append(append([]byte{}, a.PEM...), b.PEM...)) {
		t.Errorf("Bundle:\n%s", got)
	}
	if _, err := tlssecret.CAs([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")); err == nil {
		t.Error("a certificate block that does not parse was taken")
	}
}
