package etcdbackup

import (
	"slices"
	"testing"
	"time"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

// The Job of members that talk TLS mounts the client certificate's Secret
// and gives the tool its folder; without one, neither.
func TestJobPresentsTheClientCertificateOfMembersWithTLS(t *testing.T) {
	owner := resources.Owner{GVK: etcdv1beta2.GroupVersion.WithKind("EtcdBackup"), Name: "b", Namespace: "ns", UID: "u"}
	spec := &etcdv1beta2.EtcdBackupSpec{ClusterName: "e", StorageType: etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
		BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: "c", Path: "e"}}}
	for _, tt := range []struct {
		secret    string
		endpoints []string
	}{{"", []string{"http://e-0.e.ns.svc:2379"}}, {"e-operator-tls", []string{"https://e-0.e.ns.svc:2379"}}} {
		job, err := Job(owner, 1, spec, tt.endpoints, tt.secret, "op:1", JobName("b", time.Unix(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		pod := job.Spec.Template.Spec
		hasFlag := slices.Contains(pod.Containers[0].Args, "--tls-dir="+tlsDir)
		mounted := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1ac.VolumeMountApplyConfiguration) bool { return *m.MountPath == tlsDir })
		var secret string
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				secret = *v.Secret.SecretName
			}
		}
		if want := tt.secret != ""; hasFlag != want || mounted != want || secret != tt.secret {
			t.Errorf("client Secret %q: --tls-dir %v, mounted %v, Secret volume %q", tt.secret, hasFlag, mounted, secret)
		}
	}
}
