package console

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/app-operator/app-operator/internal/pki"
)

// writePair writes a new certificate for cn and its key to dir, dated
// mtime, and returns the certificate's serial.
func writePair(t *testing.T, dir, cn string, mtime time.Time) string {
	t.Helper()
	ca, err := pki.NewCA("ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(cn, []string{cn}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": pair.Cert, "tls.key": pair.Key} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	return pair.Serial.String()
}

func servedSerial(t *testing.T, c *CertFiles) string {
	t.Helper()
	cert, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.String()
}

// The certificate files are read again when they change, and the last
// good pair is kept while the files do not load.
func TestCertFilesReloadWhenTheFilesChange(t *testing.T) {
	dir := t.TempDir()
	c := &CertFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	if _, err := c.GetCertificate(nil); err == nil {
		t.Fatal("no files: a certificate served")
	}
	first := writePair(t, dir, "a", time.Unix(1000, 0))
	if got := servedSerial(t, c); got != first {
		t.Fatalf("served %s, want the files' %s", got, first)
	}
	second := writePair(t, dir, "b", time.Unix(2000, 0))
	if got := servedSerial(t, c); got != second {
		t.Errorf("after the files changed: served %s, want the new %s", got, second)
	}
	if err := os.WriteFile(c.KeyFile, []byte("half-written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, c); got != second {
		t.Errorf("with a key that does not load: served %s, want the last good %s", got, second)
	}
}
