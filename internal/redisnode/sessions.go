package redisnode

import (
	"crypto/tls"
	"sync"
)

// Sessions keeps one TLS session cache per node address across passes, so
// that a look at a node whose certificate is unchanged resumes its session
// (no certificate sent, parsed or verified) rather than handshaking in full
// on every connection.
//
// A resumed session reports the certificate of the handshake that began
// it. A node that loads another certificate makes a new TLS context, whose
// tickets its old sessions do not match, and the next connection
// handshakes in full and sees the new certificate; a client whose roots no
// longer trust the cached chain does not resume it.
type Sessions struct {
	mu     sync.Mutex
	caches map[string]tls.ClientSessionCache
}

// maxSessions bounds the addresses a Sessions keeps (one operator's every
// TLS node, a few kilobytes each): past it, as pods come and go with new
// addresses, it starts again empty.
const maxSessions = 1024

// Config returns cfg with the session cache of addr; cfg itself when s or
// cfg is nil. Each address has a cache of its own: the nodes of a cluster
// share one server name, which is the key within a cache.
func (s *Sessions) Config(cfg *tls.Config, addr string) *tls.Config {
	if s == nil || cfg == nil {
		return cfg
	}
	s.mu.Lock()
	cache, ok := s.caches[addr]
	if !ok {
		if s.caches == nil || len(s.caches) >= maxSessions {
			s.caches = map[string]tls.ClientSessionCache{}
		}
		cache = tls.NewLRUClientSessionCache(1)
		s.caches[addr] = cache
	}
	s.mu.Unlock()
	c := cfg.Clone()
	c.ClientSessionCache = cache
	return c
}
