package tlssecret

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// CAs returns the certificates of a PEM bundle, such as a ca.crt; an
// error for a block that is not a certificate that parses. Blocks of
// another type are skipped.
func CAs(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CAKey, err)
		}
		out = append(out, c)
	}
}

// SameCA reports whether a and b are one CA: they hold the same public
// key. A CA certificate renewed with its key signs nothing the one before
// could not verify; one with a new key is another CA, whatever its name.
func SameCA(a, b *x509.Certificate) bool {
	k, ok := a.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b.PublicKey)
}

// HasCA reports whether cas holds ca (SameCA).
func HasCA(cas []*x509.Certificate, ca *x509.Certificate) bool {
	for _, c := range cas {
		if SameCA(c, ca) {
			return true
		}
	}
	return false
}

// OtherCAs returns the CAs of cas that want does not hold (SameCA), in
// their order.
func OtherCAs(cas, want []*x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range cas {
		if !HasCA(want, c) && !HasCA(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// IssuedBy reports whether one of cas signed leaf: its signature verifies
// with that CA's public key.
func IssuedBy(leaf *x509.Certificate, cas []*x509.Certificate) bool {
	for _, ca := range cas {
		if leaf.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// Bundle is cas as a PEM bundle, in their order.
func Bundle(cas []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range cas {
		// Writing to a bytes.Buffer fails only out of memory.
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// Pool is a pool of cas.
func Pool(cas []*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	return pool
}
