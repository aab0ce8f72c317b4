package redisnode

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"
)

// A stopped node (SIGSTOP) still has its connections accepted by the
// kernel, and answers nothing: every call to it, plain or over TLS (whose
// handshake then never ends), gives up within the dial and call timeouts,
// not after a bound of the Redis client's own.
func TestACallToAStoppedNodeEndsWithinTheTimeouts(t *testing.T) {
	// Listening but never accepting: the kernel completes the TCP
	// handshake, and no byte ever comes back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().String()
	// Three times the timeouts: far above a call that gives up in time, far
	// below the 10 s a TLS handshake otherwise waits.
	bound := 3 * (DialTimeout + CallTimeout)
	for _, tc := range []struct {
		name string
		c    Client
	}{
		{"plain", Client{}},
		{"TLS", Client{TLS: &tls.Config{ServerName: testServerName, MinVersion: tls.VersionTLS12}, Sessions: &Sessions{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := tc.c.Info(context.Background(), addr)
			took := time.Since(start)
			var ne net.Error
			if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("INFO of a node that answers nothing: %v, want a timeout", err)
			}
			if took > bound {
				t.Errorf("INFO of a node that answers nothing gave up after %v, want within %v (dial %v, call %v)", took.Round(time.Millisecond), bound, DialTimeout, CallTimeout)
			}
		})
	}
}
