package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// frontProxyClientName is the name in the API server's client certificate
// towards aggregated API servers.
const frontProxyClientName = "front-proxy-client"

// pki holds the paths of the key material a local cluster needs: a CA, a
// serving certificate for the kube-apiserver signed by it, and the key pair
// that signs and verifies ServiceAccount tokens.
type pki struct {
	caCert     string
	caCertPEM  []byte
	servingCrt string
	servingKey string
	saKey      string
	saPub      string
	// The API server's client certificates towards kubelets and towards
	// aggregated API servers (the front proxy).
	kubeletClientCrt    string
	kubeletClientKey    string
	frontProxyClientCrt string
	frontProxyClientKey string
}

// writePKI generates fresh key material into dir. Nothing is reused between
// clusters, so a run folder is never trusted by another one.
func writePKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "app-operator local cluster CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		// The nodes in network namespaces of their own reach it at the
		// nodes' bridge address.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), net.ParseIP(nodeBridgeIP)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}

	clientCert := func(serial int64, subject pkix.Name) (certDER, keyDER []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(7 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if certDER, err = x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey); err != nil {
			return nil, nil, err
		}
		keyDER, err = x509.MarshalECPrivateKey(key)
		return certDER, keyDER, err
	}
	clientDER, clientKeyDER, err := clientCert(3, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	proxyDER, proxyKeyDER, err := clientCert(4, pkix.Name{CommonName: frontProxyClientName})
	if err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}

	p := &pki{
		caCert:     filepath.Join(dir, "ca.crt"),
		servingCrt: filepath.Join(dir, "apiserver.crt"),
		servingKey: filepath.Join(dir, "apiserver.key"),
		saKey:      filepath.Join(dir, "sa.key"),
		saPub:      filepath.Join(dir, "sa.pub"),

		kubeletClientCrt: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey: filepath.Join(dir, "apiserver-kubelet-client.key"),

		frontProxyClientCrt: filepath.Join(dir, "front-proxy-client.crt"),
		frontProxyClientKey: filepath.Join(dir, "front-proxy-client.key"),
	}
	p.caCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		p.caCert:     p.caCertPEM,
		p.servingCrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		p.servingKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: srvKeyDER}),
		p.saKey:      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		p.saPub:      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),

		p.kubeletClientCrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientDER}),
		p.kubeletClientKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: clientKeyDER}),

		p.frontProxyClientCrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxyDER}),
		p.frontProxyClientKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: proxyKeyDER}),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return p, nil
}
