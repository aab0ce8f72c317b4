package resources

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/app-operator/app-operator/internal/tlssecret"
)

// TLSVolume is the volume called name of the TLS Secret secret, for a data
// service's members: its three keys (cert-manager's layout), readable by
// the pod's group only. The kubelet rewrites the files when the Secret is
// renewed.
func TLSVolume(name, secret string) *corev1ac.VolumeApplyConfiguration {
	items := make([]*corev1ac.KeyToPathApplyConfiguration, 0, len(tlssecret.Keys))
	for _, key := range tlssecret.Keys {
		items = append(items, corev1ac.KeyToPath().WithKey(key).WithPath(key))
	}
	return corev1ac.Volume().WithName(name).WithSecret(corev1ac.SecretVolumeSource().
		WithSecretName(secret).
		WithDefaultMode(0o440).
		WithItems(items...))
}
