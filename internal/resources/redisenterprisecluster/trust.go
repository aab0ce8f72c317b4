package redisenterprisecluster

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/app-operator/app-operator/internal/tlssecret"
)

// A node checks the certificate of its primary, and of every client that
// presents one (a replica presents its own to its primary), against the
// CAs it loaded: a node that loaded the new CA alone refuses a peer that
// still presents a certificate of the old one, and the other way round.
// While the Secret moves to a new CA, every node must trust both, which a
// Secret holding the new CA alone (what a cert-manager CA Issuer writes
// once its CA has a new key) does not give. So the nodes load their CAs,
// at a reload, from the trust bundle the operator writes into the
// cluster's ConfigMap (mounted at configDir): the Secret's CAs and, until
// every node serves a certificate one of them signed, those it trusted
// before (Trust). At its start a node still reads the Secret's ca.crt
// (redis.conf), and is reloaded from the bundle at the operator's next
// look.

// trustKeyPrefix and trustKeySuffix frame the ConfigMap key of the trust
// bundle.
const (
	trustKeyPrefix = "tls-ca-"
	trustKeySuffix = ".crt"
)

// TrustKey is the ConfigMap key of the trust bundle, named by the SHA-256
// of its content: the file a node loaded its CAs from (CONFIG GET
// tls-ca-cert-file) says which bundle it trusts, and a node told to load
// a bundle the kubelet has not written into its pod yet refuses (the file
// is missing) and keeps the CAs it has.
func TrustKey(bundle []byte) string {
	sum := sha256.Sum256(bundle)
	return trustKeyPrefix + hex.EncodeToString(sum[:8]) + trustKeySuffix
}

// IsTrustKey reports whether key, a ConfigMap key, is a trust bundle's.
func IsTrustKey(key string) bool {
	return strings.HasPrefix(key, trustKeyPrefix) && strings.HasSuffix(key, trustKeySuffix)
}

// TrustPath is the file of the trust bundle in a node's pod.
func TrustPath(bundle []byte) string { return configDir + "/" + TrustKey(bundle) }

// Trust returns the CAs the operator and the nodes are to trust: current,
// the CAs of the Secret's ca.crt, and, while the move to them is not over,
// the CAs of previous (the bundle trusted until now) that current does
// not hold, compared by public key. The move is over once every node
// serves a certificate that one of current signed: served holds what each
// node serves, nil for a node whose certificate is not known (no pod, no
// answer).
func Trust(current, previous, served []*x509.Certificate) []*x509.Certificate {
	older := tlssecret.OtherCAs(previous, current)
	if len(older) == 0 || Moved(current, served) {
		return current
	}
	return append(slices.Clone(current), older...)
}

// Moved reports whether every node serves a certificate one of cas
// signed (served as in Trust); false when no node is known.
func Moved(cas, served []*x509.Certificate) bool {
	if len(served) == 0 {
		return false
	}
	for _, s := range served {
		if s == nil || !tlssecret.IssuedBy(s, cas) {
			return false
		}
	}
	return true
}
