package realpods

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/app-operator/app-operator/internal/pki"
)

// testCA signs the certificates of every TLS cluster of the tests, and of
// their clients.
var testCA = sync.OnceValues(func() (*pki.CA, error) { return pki.NewCA("realpods-ca", time.Now(), 24*time.Hour) })

// testClientTLS is the TLS configuration of the tests' clients of TLS
// clusters: a client certificate of testCA. The members are reached by IP,
// which their certificates do not name, so only the chain is checked here
// (the operator checks the client Service's name as well).
var testClientTLS = sync.OnceValues(func() (*tls.Config, error) {
	ca, err := testCA()
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue("realpods-client", nil, time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return chainOnlyTLS(pair)
})

// chainOnlyTLS presents pair's certificate and accepts a server whose
// certificate pair's CA signed, whatever the name it was reached by.
func chainOnlyTLS(pair pki.Pair) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pair.CA)
	return &tls.Config{
		Certificates:          []tls.Certificate{cert},
		InsecureSkipVerify:    true, // the chain is checked by verifyChain, the name is not
		VerifyPeerCertificate: verifyChain(pool),
	}, nil
}

// verifyChain checks that a server's certificate chains to one of pool.
func verifyChain(pool *x509.CertPool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("no server certificate")
		}
		leaf, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return err
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool})
		return err
	}
}

// writeTLSSecret writes the Secret name in namespace ns, in the layout
// cert-manager writes, with a certificate newly issued by testCA for
// hosts (a renewal, when it exists), and returns its serial.
func writeTLSSecret(t *testing.T, c client.Client, ns, name string, hosts ...string) *big.Int {
	t.Helper()
	ca, err := testCA()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(name, hosts, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	writeSecret(t, c, ns, name, pair.Data())
	return pair.Serial
}

// writeSecret creates the Secret name in namespace ns with data, or sets
// its data.
func writeSecret(t *testing.T, c client.Client, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := controllerutil.CreateOrUpdate(context.Background(), c, s, func() error {
		s.Type, s.Data = corev1.SecretTypeOpaque, data
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// servedSerial is the serial of the certificate the pod at ip presents
// on port, to a client of the test's certificate.
func servedSerial(ip string, port int) (*big.Int, error) {
	cfg, err := testClientTLS()
	if err != nil {
		return nil, err
	}
	return servedSerialWith(cfg, ip, port)
}

// servedSerialWith is servedSerial to a client of cfg.
func servedSerialWith(cfg *tls.Config, ip string, port int) (*big.Int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)), cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}
