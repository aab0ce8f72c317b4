package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// ClientTLS is the TLS configuration of a client that presents the
// certificate cert (with its key) and trusts the members whose certificate
// ca signed. serverName, when not empty, is the name each member's
// certificate is checked against (the members are then reached by IP);
// empty checks each URL's host. An error names the file at fault.
func ClientTLS(cert, key, ca []byte, serverName string) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", etcdv1beta2.TLSCertKey, etcdv1beta2.TLSKeyKey, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: %w", etcdv1beta2.TLSCAKey, errors.New("no PEM certificate"))
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// ClientTLSFromDir is ClientTLS of the files tls.crt, tls.key and ca.crt
// of dir (a mounted TLS Secret).
func ClientTLSFromDir(dir, serverName string) (*tls.Config, error) {
	var data [3][]byte
	for i, name := range []string{etcdv1beta2.TLSCertKey, etcdv1beta2.TLSKeyKey, etcdv1beta2.TLSCAKey} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		data[i] = b
	}
	return ClientTLS(data[0], data[1], data[2], serverName)
}
