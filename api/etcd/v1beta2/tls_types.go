package v1beta2

// TLSPolicy is the TLS of a cluster, in the shape the etcd operator gave
// it: spec.TLS.static names the Secrets the certificates come from.
type TLSPolicy struct {
	// Static names Secrets the user provides (a cert-manager Certificate
	// writes them); each holds tls.crt, tls.key and ca.crt. Left out
	// (TLS: {}), the operator issues the three certificates into the
	// Secrets <name>-peer-tls, <name>-server-tls and <name>-operator-tls,
	// from a CA of the cluster's own (Secret <name>-tls-ca), and issues
	// each anew a month before it expires.
	// +optional
	Static *StaticTLS `json:"static,omitempty"`
}

// StaticTLS names the Secrets of the members and of the operator.
type StaticTLS struct {
	// Member names the members' Secrets.
	// +required
	Member *MemberSecret `json:"member"`
	// OperatorSecret names the Secret of the client certificate with
	// which the operator (and its backup Jobs) call the members: with
	// TLS, a member answers only clients whose certificate its ca.crt
	// signed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	OperatorSecret string `json:"operatorSecret"`
}

// MemberSecret names the Secrets every member mounts.
type MemberSecret struct {
	// PeerSecret names the Secret of the certificate the members present
	// to one another, and of the CA they accept one another's from. It
	// must be valid for *.<cluster>.<namespace>.svc, for both server and
	// client authentication.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PeerSecret string `json:"peerSecret"`
	// ServerSecret names the Secret of the certificate the members
	// present to clients, and of the CA that signs the clients'
	// certificates. It must be valid for <cluster>-client.<namespace>.svc
	// and *.<cluster>.<namespace>.svc, for both server and client
	// authentication (a member calls its own API with it).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServerSecret string `json:"serverSecret"`
}

// TLSEnabled reports whether the members talk TLS (spec.TLS).
func (s *EtcdClusterSpec) TLSEnabled() bool { return s.TLS != nil }

// TLSSecrets are the Secrets of the members' peer and server
// certificates and of the operator's client certificate, of the cluster
// called name: spec.TLS.static's, or those the operator issues.
func (s *EtcdClusterSpec) TLSSecrets(name string) (peer, server, operator string) {
	if s.TLS != nil && s.TLS.Static != nil && s.TLS.Static.Member != nil {
		return s.TLS.Static.Member.PeerSecret, s.TLS.Static.Member.ServerSecret, s.TLS.Static.OperatorSecret
	}
	return name + "-peer-tls", name + "-server-tls", name + "-operator-tls"
}

// TLSCASecret is the Secret of the CA the operator issues the
// certificates from when spec.TLS names no Secret.
func TLSCASecret(name string) string { return name + "-tls-ca" }
