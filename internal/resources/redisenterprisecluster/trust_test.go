package redisenterprisecluster

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// trustCA is a CA of the trust tests: its certificate and one it issued.
type trustCA struct {
	cert, leaf *x509.Certificate
}

func newTrustCA(t *testing.T, ca *pki.CA) trustCA {
	t.Helper()
	cas, err := tlssecret.CAs(ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("r", []string{"r.ns.svc"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tlssecret.Leaf(pair.Data())
	if err != nil {
		t.Fatal(err)
	}
	return trustCA{cert: cas[0], leaf: leaf}
}

// The nodes and the operator trust the Secret's CAs and, until every node
// serves a certificate one of them signed, the CAs trusted before: a node
// whose certificate is not known may still serve the old CA's. CAs are
// compared by key, so a CA renewed with its key starts no move.
func TestTrustKeepsTheOldCAsUntilEveryNodeServesACertificateOfTheNew(t *testing.T) {
	oldCA, err := pki.NewCA("redis-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	renewedCA, err := oldCA.Renewed(time.Now().Add(time.Minute), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("redis-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old, renewed, fresh := newTrustCA(t, oldCA), newTrustCA(t, renewedCA), newTrustCA(t, newCA)
	list := func(cs ...trustCA) []*x509.Certificate {
		out := make([]*x509.Certificate, 0, len(cs))
		for _, c := range cs {
			out = append(out, c.cert)
		}
		return out
	}
	serving := func(leaves ...*x509.Certificate) []*x509.Certificate { return leaves }
	for _, tt := range []struct {
		name              string
		current, previous []*x509.Certificate
		served            []*x509.Certificate
		want              []*x509.Certificate
	}{
		{"nothing trusted before", list(fresh), nil, serving(old.leaf, old.leaf, old.leaf), list(fresh)},
		{"the same CA", list(old), list(old), serving(old.leaf, old.leaf, old.leaf), list(old)},
		{"the CA renewed with its key", list(renewed), list(old), serving(old.leaf, old.leaf, old.leaf), list(renewed)},
		{"a new CA, every node on the old", list(fresh), list(old), serving(old.leaf, old.leaf, old.leaf), list(fresh, old)},
		{"a new CA, one node moved", list(fresh), list(old), serving(fresh.leaf, old.leaf, old.leaf), list(fresh, old)},
		{"a new CA, one node not known", list(fresh), list(old), serving(fresh.leaf, nil, fresh.leaf), list(fresh, old)},
		{"a new CA, no node known", list(fresh), list(old), nil, list(fresh, old)},
		{"a new CA, every node moved", list(fresh), list(old), serving(fresh.leaf, fresh.leaf, fresh.leaf), list(fresh)},
		{"both CAs in ca.crt", list(old, fresh), list(old), serving(old.leaf, old.leaf, old.leaf), list(old, fresh)},
		{"the old CA taken out of ca.crt", list(fresh), list(old, fresh), serving(fresh.leaf, fresh.leaf, fresh.leaf), list(fresh)},
		{"the old CA taken out too early", list(fresh), list(old, fresh), serving(old.leaf, fresh.leaf, fresh.leaf), list(fresh, old)},
		{"a second new CA mid-move", list(newTrustCA(t, mustCA(t))), list(fresh, old), serving(old.leaf, fresh.leaf, fresh.leaf), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Trust(tt.current, tt.previous, tt.served)
			want := tt.want
			if want == nil {
				// Every CA trusted so far stays, after the Secret's.
				want = append(append([]*x509.Certificate{}, tt.current...), tt.previous...)
			}
			if !bytes.Equal(tlssecret.Bundle(got), tlssecret.Bundle(want)) {
				t.Errorf("Trust = %v, want %v", caNames(got), caNames(want))
			}
		})
	}
}

func mustCA(t *testing.T) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA("another", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func caNames(cs []*x509.Certificate) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Subject.CommonName+"/"+c.SerialNumber.String()[:6])
	}
	return out
}

// With spec.tls the ConfigMap holds the trust bundle, under a key named
// by its content; without TLS, or without a bundle (a preview), none.
func TestTheConfigMapHoldsTheTrustBundleUnderAKeyOfItsContent(t *testing.T) {
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	secure := &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "r-tls"}}
	a, b := mustCA(t), mustCA(t)
	bundle := append(append([]byte{}, a.PEM...), b.PEM...)
	c, err := Build(owner, secure, Input{TLSTrust: bundle})
	if err != nil {
		t.Fatal(err)
	}
	key := TrustKey(bundle)
	if got := c.ConfigMap.Data[key]; got != string(bundle) || !IsTrustKey(key) {
		t.Errorf("ConfigMap key %s: %q (a trust key: %v)", key, got, IsTrustKey(key))
	}
	if TrustKey(a.PEM) == key || TrustKey(bundle) != key {
		t.Error("the trust key does not follow the bundle's content")
	}
	if TrustPath(bundle) != "/etc/redis/"+key {
		t.Errorf("TrustPath = %s", TrustPath(bundle))
	}
	for name, in := range map[string]struct {
		spec  *redisv1alpha1.RedisEnterpriseClusterSpec
		input Input
	}{
		"without TLS": {&redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}, Input{TLSTrust: bundle}},
		"a preview":   {secure, Input{}},
	} {
		c, err := Build(owner, in.spec, in.input)
		if err != nil {
			t.Fatal(err)
		}
		for k := range c.ConfigMap.Data {
			if IsTrustKey(k) || strings.HasPrefix(k, "tls") {
				t.Errorf("%s: ConfigMap key %s", name, k)
			}
		}
	}
}
