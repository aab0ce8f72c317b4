package v1beta2

import "strings"

// EtcdOption is one etcd flag, --name=value, that the operator passes to
// every member as it is. The flags the operator sets itself (the
// member's name, data folder, URLs, initial cluster, token and state,
// TLS, metrics URLs, discovery; the compaction and the quota, which
// spec.maintenance sets) are refused: a member started with
// another value of them would not be the member the operator registered.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="self.matches('^--[a-z][a-z0-9-]*=.*$')",messageExpression="'spec.etcdOptions: ' + self + ' is not a flag of the form --name=value'"
// +kubebuilder:validation:XValidation:rule="!self.matches('^--[a-z][a-z0-9-]*=') || !(self.split('=')[0].substring(2) in ['name', 'data-dir', 'wal-dir', 'config-file', 'force-new-cluster', 'auto-compaction-mode', 'auto-compaction-retention', 'quota-backend-bytes', 'client-cert-auth', 'peer-client-cert-auth', 'auto-tls', 'peer-auto-tls', 'cipher-suites', 'tls-min-version', 'tls-max-version'] || self.split('=')[0].substring(2).startsWith('listen-') || self.split('=')[0].substring(2).startsWith('advertise-') || self.split('=')[0].substring(2).startsWith('initial-') || self.split('=')[0].substring(2).startsWith('discovery') || self.split('=')[0].substring(2).matches('(cert|key|crl|ca)-file$|san-verification$|allowed-(cn|hostname)$'))",messageExpression="'spec.etcdOptions: ' + self.split('=')[0] + ' is set by the operator and cannot be given'"
type EtcdOption string

// Flag is the option's name without its dashes, and its value.
func (o EtcdOption) Flag() (name, value string) {
	name, value, _ = strings.Cut(strings.TrimPrefix(string(o), "--"), "=")
	return name, value
}
