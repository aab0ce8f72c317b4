// Package etcdbackup builds the Jobs of an EtcdBackup and the snapshot
// tool's arguments for a backup location, which the restore of an
// EtcdCluster's first member uses too. Like every builder, it is pure.
package etcdbackup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

const (
	// KindName is the value of app.kubernetes.io/name on the Jobs and
	// their pods.
	KindName = "etcdbackup"
	// ContainerName is the name of the container that runs the snapshot
	// tool.
	ContainerName = "snapshot"
	// Tool is the snapshot tool's path in the operator's image.
	Tool = "/etcd-snapshot"
	// GenerationAnnotation on a Job is the EtcdBackup generation it was
	// made for.
	GenerationAnnotation = "etcd.database.coreos.com/backup-generation"
	// ExitPermanent is the tool's exit code for a failure that trying
	// again cannot mend (access denied, no such bucket): the Job fails at
	// once rather than retry.
	ExitPermanent = 2

	credentialsDir = "/etc/etcd-backup/aws"
	claimDir       = "/backup"
	tmpDir         = "/tmp"
	// tlsDir is where the client certificate's Secret is mounted.
	tlsDir = "/etc/etcd-snapshot/tls"
	// retries is how many times a Job retries a backup that failed for a
	// reason that may pass (a member restarting).
	retries = 2
)

// Selector selects the Jobs and pods of the EtcdBackup name.
func Selector(name string) map[string]string { return resources.Selector(KindName, name, nil) }

// JobName is the name of the Job of the backup name scheduled at t.
func JobName(name string, t time.Time) string { return name + "-" + strconv.FormatInt(t.Unix(), 10) }

// Location is where the tool finds or puts snapshots: its arguments, and
// the volumes and mounts that give it the credentials or the claim.
type Location struct {
	Args    []string
	Volumes []*corev1ac.VolumeApplyConfiguration
	Mounts  []*corev1ac.VolumeMountApplyConfiguration
}

// LocationOf returns the location of storage type storage at loc, for
// the tool's flag flag (--to for a save, --from for a restore).
func LocationOf(flag string, storage etcdv1beta2.BackupStorageType, loc etcdv1beta2.BackupLocation) (Location, error) {
	switch {
	case storage == etcdv1beta2.BackupStorageTypeS3 && loc.S3 != nil:
		s3 := loc.S3
		args := []string{fmt.Sprintf("--%s=s3://%s", flag, s3.Path), "--aws-credentials-file=" + credentialsDir + "/" + etcdv1beta2.AWSSecretCredentialsFileName, "--aws-secret=" + s3.AWSSecret}
		if s3.Endpoint != "" {
			args = append(args, "--s3-endpoint="+s3.Endpoint)
		}
		if s3.ForcePathStyle {
			args = append(args, "--s3-force-path-style")
		}
		// Optional: without the Secret the tool starts and says which
		// one it misses, rather than the pod waiting for the mount.
		return Location{
			Args: args,
			Volumes: []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("credentials").
				WithSecret(corev1ac.SecretVolumeSource().WithSecretName(s3.AWSSecret).WithOptional(true))},
			Mounts: []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("credentials").WithMountPath(credentialsDir).WithReadOnly(true)},
		}, nil
	case storage == etcdv1beta2.BackupStorageTypePersistentVolumeClaim && loc.PersistentVolumeClaim != nil:
		pvc := loc.PersistentVolumeClaim
		return Location{
			Args: []string{fmt.Sprintf("--%s=%s/%s", flag, claimDir, strings.TrimPrefix(pvc.Path, "/"))},
			Volumes: []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("backup").
				WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(pvc.ClaimName))},
			Mounts: []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("backup").WithMountPath(claimDir)},
		}, nil
	}
	return Location{}, fmt.Errorf("storage type %q has no location", storage)
}

// Job is the Job that takes one snapshot for the backup owner: the tool
// reads it from the member furthest along among endpoints and stores it
// at the spec's location, and writes what it did (or why it failed) as
// its termination message.
//
// clientTLS, when not empty, names the Secret of the client certificate
// the tool presents to members that talk TLS.
func Job(owner resources.Owner, generation int64, spec *etcdv1beta2.EtcdBackupSpec, endpoints []string, clientTLS, image, name string) (*batchv1ac.JobApplyConfiguration, error) {
	loc, err := LocationOf("to", spec.StorageType, spec.BackupLocation)
	if err != nil {
		return nil, err
	}
	args := []string{"save", "--endpoints=" + strings.Join(endpoints, ","), fmt.Sprintf("--timeout=%ds", spec.Timeout())}
	if spec.BackupPolicy != nil && spec.BackupPolicy.MaxBackups > 0 {
		args = append(args, fmt.Sprintf("--max-backups=%d", spec.BackupPolicy.MaxBackups))
	}
	args = append(args, loc.Args...)
	mounts := append([]*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("tmp").WithMountPath(tmpDir)}, loc.Mounts...)
	volumes := append([]*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource())}, loc.Volumes...)
	if clientTLS != "" {
		args = append(args, "--tls-dir="+tlsDir)
		mounts = append(mounts, corev1ac.VolumeMount().WithName("client-tls").WithMountPath(tlsDir).WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName("client-tls").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(clientTLS).WithDefaultMode(0o440)))
	}

	labels := resources.Labels(Selector(owner.Name))
	job, pod := resources.ToolJob{
		Name:        name,
		Labels:      labels,
		Annotations: map[string]string{GenerationAnnotation: strconv.FormatInt(generation, 10)},
		Container: corev1ac.Container().
			WithName(ContainerName).
			WithImage(image).
			WithCommand(Tool).
			WithArgs(args...).
			WithVolumeMounts(mounts...),
		Volumes:       volumes,
		Timeout:       spec.Timeout(),
		Retries:       retries,
		PermanentExit: ExitPermanent,
	}.Build(owner)
	if spec.Pod != nil {
		resources.Place(pod, spec.Pod.Placement)
	}
	return job, nil
}
