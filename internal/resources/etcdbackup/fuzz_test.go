package etcdbackup

import (
	"slices"
	"strings"
	"testing"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds, from any EtcdBackup and any EtcdRestore (both read
// from the same input), a backup Job and a restore's location: every
// volume a container mounts exists, the tool is told where the snapshots
// are, and the pod runs as no root.
func FuzzBuild(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"b"},"spec":{"clusterName":"example","storageType":"PersistentVolumeClaim","persistentVolumeClaim":{"claimName":"c","path":"p"}}}`))
	f.Fuzz(func(t *testing.T, spec []byte) {
		b := &etcdv1beta2.EtcdBackup{}
		fuzzspec.Decode(spec, "ns", b)
		b.UID = "uid"
		job, err := Job(resources.OwnerOf(b, etcdv1beta2.GroupVersion.WithKind("EtcdBackup")), b.Generation, &b.Spec, []string{"http://m:2379"}, b.Spec.ClientTLSSecret, "img", JobName(b.Name, b.CreationTimestamp.Time))
		if err != nil {
			if b.Spec.StorageType == etcdv1beta2.BackupStorageTypeS3 && b.Spec.S3 != nil ||
				b.Spec.StorageType == etcdv1beta2.BackupStorageTypePersistentVolumeClaim && b.Spec.PersistentVolumeClaim != nil {
				t.Fatalf("no job for a backup with its location: %v", err)
			}
			return
		}
		pod := job.Spec.Template.Spec
		if *pod.SecurityContext.RunAsNonRoot != true || *pod.Containers[0].SecurityContext.AllowPrivilegeEscalation {
			t.Fatal("the tool may run as root")
		}
		var volumes []string
		for _, v := range pod.Volumes {
			volumes = append(volumes, *v.Name)
		}
		for _, m := range pod.Containers[0].VolumeMounts {
			if !slices.Contains(volumes, *m.Name) {
				t.Fatalf("mount %s of no volume (volumes %v)", *m.Name, volumes)
			}
		}
		if !slices.ContainsFunc(pod.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--to=") }) {
			t.Fatalf("args %v say not where to store", pod.Containers[0].Args)
		}

		r := &etcdv1beta2.EtcdRestore{}
		fuzzspec.Decode(spec, "ns", r)
		loc, err := LocationOf("from", r.Spec.BackupStorageType, r.Spec.BackupLocation)
		if err == nil && (len(loc.Args) == 0 || !strings.HasPrefix(loc.Args[0], "--from=") || len(loc.Volumes) != len(loc.Mounts)) {
			t.Fatalf("restore location %+v", loc)
		}
	})
}
