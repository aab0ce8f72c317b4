package redisnode

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tlsNode is a TLS server that answers every command with a role line, as
// a Redis primary answers INFO, and counts the handshakes it resumed. Its
// certificate (and with it its TLS context) can be replaced, as a node that
// reloads its files does.
type tlsNode struct {
	ln      net.Listener
	mu      sync.Mutex
	cfg     *tls.Config
	full    atomic.Int32
	resumed atomic.Int32
}

const testServerName = "node.example"

// newCert returns a self-signed certificate for testServerName.
func newCert(t *testing.T, serial int64) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: testServerName}, DNSNames: []string{testServerName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}

func newTLSNode(t *testing.T, cert tls.Certificate) *tlsNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &tlsNode{ln: ln}
	n.load(cert)
	t.Cleanup(func() { _ = ln.Close() })
	go n.serve()
	return n
}

// load serves cert from a new TLS context, whose session tickets those of
// the one before do not match.
func (n *tlsNode) load(cert tls.Certificate) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

func (n *tlsNode) serve() {
	for {
		raw, err := n.ln.Accept()
		if err != nil {
			return
		}
		n.mu.Lock()
		cfg := n.cfg
		n.mu.Unlock()
		go func() {
			conn := tls.Server(raw, cfg)
			defer func() { _ = conn.Close() }()
			if err := conn.Handshake(); err != nil {
				return
			}
			if conn.ConnectionState().DidResume {
				n.resumed.Add(1)
			} else {
				n.full.Add(1)
			}
			r := bufio.NewReader(conn)
			// One command of RESP: *N, then $len and the argument N times.
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			var args int
			if _, err := fmt.Sscan(line[1:], &args); err != nil {
				return
			}
			for range 2 * args {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
			body := "role:master\r\n"
			_, _ = conn.Write([]byte("$" + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n"))
		}()
	}
}

// handshakes returns the full and the resumed handshakes the node counted,
// once they are want in all (the server counts after the client has
// returned) or a second has passed.
func (n *tlsNode) handshakes(want int32) (full, resumed int32) {
	for end := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		full, resumed = n.full.Load(), n.resumed.Load()
		if full+resumed >= want || time.Now().After(end) {
			return full, resumed
		}
	}
}

// A node whose certificate is unchanged is handshaken in full once, then
// its session resumed at every look, its certificate still reported; once
// it serves another certificate from a new TLS context, the next look
// handshakes in full and sees it. Without Sessions, every look is a full
// handshake.
func TestSessionsResumeANodesHandshakeUntilItsCertificateChanges(t *testing.T) {
	ctx := context.Background()
	first, firstLeaf := newCert(t, 1)
	second, secondLeaf := newCert(t, 2)
	n := newTLSNode(t, first)
	addr := n.ln.Addr().String()
	roots := x509.NewCertPool()
	roots.AddCert(firstLeaf)
	roots.AddCert(secondLeaf)
	clientTLS := &tls.Config{RootCAs: roots, ServerName: testServerName, MinVersion: tls.VersionTLS12}

	plain := Client{TLS: clientTLS}
	for range 3 {
		if _, err := plain.Info(ctx, addr); err != nil {
			t.Fatal(err)
		}
	}
	if full, resumed := n.handshakes(3); full != 3 || resumed != 0 {
		t.Fatalf("without Sessions: %d full handshakes and %d resumed of 3 looks, want 3 and 0", full, resumed)
	}

	n.full.Store(0)
	c := Client{TLS: clientTLS, Sessions: &Sessions{}}
	for range 3 {
		if _, err := c.Info(ctx, addr); err != nil {
			t.Fatal(err)
		}
		served, err := c.Served(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if !served.Equal(firstLeaf) {
			t.Fatalf("served certificate %v, want the first", served.SerialNumber)
		}
	}
	if full, resumed := n.handshakes(6); full != 1 || resumed != 5 {
		t.Fatalf("with Sessions: %d full handshakes and %d resumed of 6 connections, want 1 and 5", full, resumed)
	}

	n.load(second)
	served, err := c.Served(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if !served.Equal(secondLeaf) {
		t.Errorf("after the node loaded another certificate, served %v, want the second", served.SerialNumber)
	}
	if full, _ := n.handshakes(7); full != 2 {
		t.Errorf("%d full handshakes after the node loaded another certificate, want 2", full)
	}
}
