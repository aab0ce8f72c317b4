// Package tlssecret reads the certificates of a TLS Secret in the layout
// cert-manager writes (tls.crt, tls.key and ca.crt), for the data services'
// members and their clients: the operator, and the backup tools, which
// read it as mounted files.
package tlssecret

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// The keys of a TLS Secret, and the names of its files once mounted.
const (
	CertKey = corev1.TLSCertKey
	KeyKey  = corev1.TLSPrivateKeyKey
	CAKey   = corev1.ServiceAccountRootCAKey
)

// Keys are the three keys, in the order above.
var Keys = []string{CertKey, KeyKey, CAKey}

// Check reports what keeps data, a Secret's data, from serving: a key
// missing, a certificate that does not match its key, or no CA
// certificate. The error names the key at fault.
func Check(data map[string][]byte) error {
	for _, key := range Keys {
		if len(data[key]) == 0 {
			return fmt.Errorf("no key %q", key)
		}
	}
	if _, err := tls.X509KeyPair(data[CertKey], data[KeyKey]); err != nil {
		return fmt.Errorf("%s and %s: %w", CertKey, KeyKey, err)
	}
	_, err := caPool(data[CAKey])
	return err
}

// ClientConfig is the TLS configuration of a client that presents the
// certificate cert (with its key) and trusts the servers whose certificate
// ca signed. serverName, when not empty, is the name each server's
// certificate is checked against (the servers are then reached by IP);
// empty checks each URL's host. An error names the key at fault.
func ClientConfig(cert, key, ca []byte, serverName string) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", CertKey, KeyKey, err)
	}
	pool, err := caPool(ca)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// ClientConfigOf is ClientConfig of a Secret's data.
func ClientConfigOf(data map[string][]byte, serverName string) (*tls.Config, error) {
	return ClientConfig(data[CertKey], data[KeyKey], data[CAKey], serverName)
}

// ClientConfigFromDir is ClientConfig of the files of dir (a mounted TLS
// Secret).
func ClientConfigFromDir(dir, serverName string) (*tls.Config, error) {
	data := map[string][]byte{}
	for _, name := range Keys {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		data[name] = b
	}
	return ClientConfigOf(data, serverName)
}

// Leaf is the certificate of data, a Secret's data.
func Leaf(data map[string][]byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data[CertKey])
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM certificate", CertKey)
	}
	return x509.ParseCertificate(block.Bytes)
}

func caPool(ca []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: %w", CAKey, errors.New("no PEM certificate"))
	}
	return pool, nil
}
