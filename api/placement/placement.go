// Package placement holds where a kind's pods may run and how they spread
// over the nodes: a node selector, tolerations and a spread. AppService,
// WebService, MicroServiceDeploy, Memcached, MyWeb and
// RedisEnterpriseCluster inline it into their spec; EtcdCluster holds it
// under spec.pod.
// +kubebuilder:object:generate=true
package placement

import corev1 "k8s.io/api/core/v1"

// DefaultTopologyKey is the node label the pods spread over when
// spread.topologyKey is left out: one domain per node.
const DefaultTopologyKey = corev1.LabelHostname

// Placement says where a kind's pods may run and how they spread.
type Placement struct {
	// NodeSelector restricts the pods to the nodes that carry every one of
	// these labels (the pod's nodeSelector).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="nodeSelector keys must be label keys: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// Tolerations let the pods run on nodes with matching taints (the
	// pod's tolerations).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// Spread spreads the pods over the domains of a node label: the nodes
	// (kubernetes.io/hostname) unless it names another label, and as a
	// preference unless it is required. Left out, the pods spread over the
	// nodes as a preference.
	// +optional
	Spread *Spread `json:"spread,omitempty"`
}

// LabelValue is the value of a node label: at most 63 letters, digits,
// '-', '_' or '.', starting and ending with a letter or digit, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// Toleration is a core/v1 Toleration, with the checks the API server makes
// on a pod's tolerations, so that a resource the schema accepts never
// builds a pod the API server refuses.
// +kubebuilder:validation:XValidation:rule="(has(self.key) && size(self.key) != 0) || (has(self.operator) && self.operator == 'Exists')",message="the operator must be Exists when the key is empty (to tolerate every taint)"
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="the value must be empty when the operator is Exists"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="tolerationSeconds needs the effect NoExecute"
type Toleration struct {
	// Key is the taint key the toleration matches; empty matches every
	// key, with the operator Exists.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || !format.qualifiedName().validate(self).hasValue()",message="key must be a label key: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Key string `json:"key,omitempty"`

	// Operator is Equal (the default: the taint's value must be Value)
	// or Exists (any value).
	// +optional
	// +kubebuilder:validation:Enum=Exists;Equal
	Operator corev1.TolerationOperator `json:"operator,omitempty"`

	// Value is the taint value the toleration matches, with the operator
	// Equal.
	// +optional
	Value LabelValue `json:"value,omitempty"`

	// Effect is the taint effect the toleration matches: NoSchedule,
	// PreferNoSchedule or NoExecute; empty matches every effect.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect,omitempty"`

	// TolerationSeconds, with the effect NoExecute, is how long the pod
	// stays on a node after the taint appears; unset, forever.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Spread is how the pods spread over the domains of a node label.
type Spread struct {
	// TopologyKey is the node label whose values are the domains the pods
	// spread over: kubernetes.io/hostname (one domain per node, the
	// default) or, for instance, topology.kubernetes.io/zone.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="topologyKey must be a label key: an optional DNS subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	TopologyKey string `json:"topologyKey,omitempty"`

	// Required makes the spread a rule rather than a preference. The
	// members of an EtcdCluster or a RedisEnterpriseCluster then never
	// share a domain, and the replicas of a Deployment never differ by
	// more than one between domains: a pod that cannot be placed so stays
	// Pending. False (the default) places such a pod anyway.
	// +optional
	Required bool `json:"required,omitempty"`
}

// Key is the topology key of s: its own, or DefaultTopologyKey.
func (s *Spread) Key() string {
	if s == nil || s.TopologyKey == "" {
		return DefaultTopologyKey
	}
	return s.TopologyKey
}

// IsRequired reports whether s is required; a nil spread is not.
func (s *Spread) IsRequired() bool { return s != nil && s.Required }

// PodNodeSelector is the node selector as a pod's: nil when empty.
func (p Placement) PodNodeSelector() map[string]string {
	if len(p.NodeSelector) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.NodeSelector))
	for k, v := range p.NodeSelector {
		out[k] = string(v)
	}
	return out
}

// PodTolerations are the tolerations as a pod's.
func (p Placement) PodTolerations() []corev1.Toleration {
	if len(p.Tolerations) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(p.Tolerations))
	for _, t := range p.Tolerations {
		out = append(out, corev1.Toleration{
			Key:               t.Key,
			Operator:          t.Operator,
			Value:             string(t.Value),
			Effect:            t.Effect,
			TolerationSeconds: t.TolerationSeconds,
		})
	}
	return out
}
