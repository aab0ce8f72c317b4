package v1beta2

// TLSPolicy is the TLS of a cluster, in the shape the etcd operator gave
// it: spec.TLS.static names the Secrets the certificates come from.
type TLSPolicy struct {
	// Static names Secrets the user provides (a cert-manager Certificate
	// writes them); each holds tls.crt, tls.key and ca.crt.
	// +required
	Static *StaticTLS `json:"static"`
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

// TLSEnabled reports whether the members talk TLS (spec.TLS.static).
func (s *EtcdClusterSpec) TLSEnabled() bool {
	return s.TLS != nil && s.TLS.Static != nil && s.TLS.Static.Member != nil
}
