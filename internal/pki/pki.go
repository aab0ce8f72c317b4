// Package pki issues certificates: a CA, and certificates it signs in the
// layout cert-manager writes to a Secret (tls.crt, tls.key, ca.crt). The
// operator issues with it the certificates of a data service whose TLS
// names no Secret; the tests, those a user's cert-manager would write.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"time"

	"github.com/app-operator/app-operator/internal/tlssecret"
)

// CA is a certificate authority.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// PEM and KeyPEM are the CA's certificate and key.
	PEM, KeyPEM []byte
}

// Pair is a certificate, its key and the CA that signed it, in PEM.
type Pair struct {
	Cert, Key, CA []byte
	// Serial is the certificate's serial number.
	Serial *big.Int
}

// Data is the pair as a Secret's data, in cert-manager's layout.
func (p Pair) Data() map[string][]byte {
	return map[string][]byte{tlssecret.CertKey: p.Cert, tlssecret.KeyKey: p.Key, tlssecret.CAKey: p.CA}
}

// NewCA returns a new CA called name, valid from an hour before now for
// validity.
func NewCA(name string, now time.Time, validity time.Duration) (*CA, error) {
	tmpl := template(name, now, validity)
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	certPEM, keyPEM, err := sign(tmpl, nil, nil)
	if err != nil {
		return nil, err
	}
	return LoadCA(certPEM, keyPEM)
}

// LoadCA is the CA of a certificate and its key, in PEM.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tlsKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !pair.cert.IsCA {
		return nil, errors.New("not a CA certificate")
	}
	return &CA{cert: pair.cert, key: pair.key, PEM: certPEM, KeyPEM: keyPEM}, nil
}

// Renewed returns ca with a new certificate of the same name and key,
// valid from an hour before now for validity, as cert-manager renews a
// CA certificate whose key it keeps: what ca signed, the renewed CA
// verifies.
func (ca *CA) Renewed(now time.Time, validity time.Duration) (*CA, error) {
	tmpl := template(ca.cert.Subject.CommonName, now, validity)
	tmpl.KeyUsage = ca.cert.KeyUsage
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, ca.key.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	return LoadCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.KeyPEM)
}

// Issue returns a certificate of common name cn, valid for hosts (DNS
// names or IP addresses), for server and client authentication, from an
// hour before now for validity.
func (ca *CA) Issue(cn string, hosts []string, now time.Time, validity time.Duration) (Pair, error) {
	tmpl := template(cn, now, validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	certPEM, keyPEM, err := sign(tmpl, ca.cert, ca.key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Cert: certPEM, Key: keyPEM, CA: ca.PEM, Serial: tmpl.SerialNumber}, nil
}

// template is a certificate of common name cn, valid from an hour before
// now for validity, with a new serial.
func template(cn string, now time.Time, validity time.Duration) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}
}

// sign makes a new key and the certificate tmpl of it, signed by parent
// with parentKey (by itself when parent is nil), both in PEM.
func sign(tmpl, parent *x509.Certificate, parentKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Current reports whether data, a TLS Secret's, holds a certificate with
// its key that ca signed, of common name cn, for exactly hosts, with ca's
// certificate as ca.crt, and valid at least until now+margin: whether it
// may stay as it is rather than be issued anew.
func (ca *CA) Current(data map[string][]byte, cn string, hosts []string, now time.Time, margin time.Duration) bool {
	pair, err := tlsKeyPair(data[tlssecret.CertKey], data[tlssecret.KeyKey])
	if err != nil || !bytes.Equal(data[tlssecret.CAKey], ca.PEM) {
		return false
	}
	c := pair.cert
	if c.Subject.CommonName != cn || c.CheckSignatureFrom(ca.cert) != nil || now.Add(margin).After(c.NotAfter) {
		return false
	}
	var got []string
	got = append(got, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		got = append(got, ip.String())
	}
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(hosts)))
}

type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func tlsKeyPair(certPEM, keyPEM []byte) (keyPair, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return keyPair{}, errors.New("no PEM certificate or key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return keyPair{}, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return keyPair{}, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return keyPair{}, errors.New("the key is not the certificate's")
	}
	return keyPair{cert: cert, key: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
