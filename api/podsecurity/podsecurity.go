// Package podsecurity holds the pod security settings that AppService,
// WebService, MicroServiceDeploy, Memcached and MyWeb accept, inlined into
// their spec. RedisEnterpriseCluster and EtcdCluster have none: their pods
// are always built to pass the restricted Pod Security level.
// +kubebuilder:object:generate=true
package podsecurity

import corev1 "k8s.io/api/core/v1"

// Profile names a Pod Security Standard the generated pods are built to pass.
// +kubebuilder:validation:Enum=Baseline;Restricted
type Profile string

const (
	// Baseline: seccomp RuntimeDefault and no privilege escalation. Every
	// image the operator's samples use runs under it.
	Baseline Profile = "Baseline"
	// Restricted adds: non-root user, every capability dropped, read-only
	// root filesystem. Only for images built to run that way.
	Restricted Profile = "Restricted"
)

// Settings select how tightly the generated pods are locked down.
type Settings struct {
	// SecurityProfile is the Pod Security Standard the pods are built to
	// pass: Baseline or Restricted. Unset uses the operator's default
	// (--default-security-profile, Baseline unless changed).
	// +optional
	SecurityProfile Profile `json:"securityProfile,omitempty"`

	// PodSecurityContext, when set, replaces the pod-level security context
	// the profile would set.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// SecurityContext, when set, replaces the container-level security
	// context the profile would set.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}
