package console

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/app-operator/app-operator/internal/pki"
)

// CertFiles serves the certificate of a PEM certificate and key file,
// read again when either file's modification time changes (a Secret
// mounted as a volume is updated in place when it changes).
type CertFiles struct {
	CertFile, KeyFile string

	mu                sync.Mutex
	certTime, keyTime time.Time
	cert              *tls.Certificate
}

// GetCertificate is tls.Config.GetCertificate: the files' certificate,
// read again when they changed; the last one read when the new files do
// not load (a half-written update).
func (c *CertFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certInfo, err1 := os.Stat(c.CertFile)
	keyInfo, err2 := os.Stat(c.KeyFile)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err1 == nil && err2 == nil && (c.cert == nil || !certInfo.ModTime().Equal(c.certTime) || !keyInfo.ModTime().Equal(c.keyTime)) {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		switch {
		case err == nil:
			c.cert, c.certTime, c.keyTime = &cert, certInfo.ModTime(), keyInfo.ModTime()
		case c.cert == nil:
			return nil, fmt.Errorf("load the certificate %s and key %s: %w", c.CertFile, c.KeyFile, err)
		}
	}
	if c.cert == nil {
		return nil, fmt.Errorf("cannot read the certificate %s or key %s", c.CertFile, c.KeyFile)
	}
	return c.cert, nil
}

// SelfSigned is a certificate for hosts from a CA made for it alone, valid
// for a year: what the console serves when it is given no certificate.
func SelfSigned(hosts []string, now time.Time) (*tls.Certificate, error) {
	ca, err := pki.NewCA("redis-console", now, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue(hosts[0], hosts, now, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

// TLSConfig is the servers' TLS configuration: TLS 1.2 and later, with
// the certificate of get.
func TLSConfig(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: get}
}
