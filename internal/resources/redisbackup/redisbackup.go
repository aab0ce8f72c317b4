package redisbackup

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

const (
	// KindName is the value of app.kubernetes.io/name on the backup Jobs
	// and their pods: not the cluster's, so that its pod selector never
	// takes a Job's pod for a node.
	KindName = "redisbackup"
	// DefaultTimeout is how long one backup may take when
	// spec.backup.timeoutSeconds is left out.
	DefaultTimeout = 600
	// ScheduledAnnotation on a Job is when the operator started it
	// (RFC 3339): the next backup is due an interval after.
	ScheduledAnnotation = "app-operator/backup-scheduled-at"
	// RequestAnnotation on a Job is the backup request
	// (redisv1alpha1.BackupNowAnnotation) it was started for; a Job of
	// the schedule has none.
	RequestAnnotation = "app-operator/backup-request"
	// RestoreContainerName is the init container that fills the first
	// node with the backup of spec.restore.
	RestoreContainerName = "restore"

	claimDir = "/backup"
	tmpDir   = "/tmp"
	// tlsDir is where, with spec.tls, the nodes' TLS Secret is mounted.
	tlsDir = "/etc/redis-snapshot/tls"
	// retries is how many times a Job retries a backup that failed for a
	// reason that may pass (a node restarting).
	retries = 2
)

// Selector selects the backup Jobs, and their pods, of the cluster name.
func Selector(cluster string) map[string]string { return resources.Selector(KindName, cluster, nil) }

// JobName is the name of the cluster's backup Job started at t: at most
// 63 characters for a cluster name of at most 50.
func JobName(cluster string, t time.Time) string {
	return cluster + "-b-" + strconv.FormatInt(t.Unix(), 10)
}

// Scheduled is when the backup Job with annotations started: its
// ScheduledAnnotation, else created.
func Scheduled(annotations map[string]string, created time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339, annotations[ScheduledAnnotation]); err == nil {
		return t
	}
	return created
}

// Location is where the tool finds or puts backups: its arguments, and
// the environment, volumes and mounts that give it the credentials or
// the claim.
type Location struct {
	Args    []string
	Env     []*corev1ac.EnvVarApplyConfiguration
	Volumes []*corev1ac.VolumeApplyConfiguration
	Mounts  []*corev1ac.VolumeMountApplyConfiguration
}

// LocationOf returns the location of name (a backup, or the prefix of the
// backups of a cluster) in storage, for the tool's flag flag: --to for a
// backup, --from for a restore.
func LocationOf(flag string, storage redisv1alpha1.BackupStorage, name string) (Location, error) {
	switch {
	case storage.S3 != nil:
		s3 := storage.S3
		args := []string{fmt.Sprintf("--%s=s3://%s", flag, path.Join(s3.BucketName, s3.Subdir, name)), "--aws-secret=" + s3.AWSSecretName}
		if s3.Endpoint != "" {
			args = append(args, "--s3-endpoint="+s3.Endpoint)
		}
		if s3.ForcePathStyle {
			args = append(args, "--s3-force-path-style")
		}
		// Optional: without the Secret, or a key of it, the tool starts
		// and says what it misses, rather than the pod waiting for it.
		key := func(env, key string) *corev1ac.EnvVarApplyConfiguration {
			return corev1ac.EnvVar().WithName(env).WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(s3.AWSSecretName).WithKey(key).WithOptional(true)))
		}
		return Location{Args: args, Env: []*corev1ac.EnvVarApplyConfiguration{
			key("AWS_ACCESS_KEY_ID", redisv1alpha1.AWSAccessKeyIDKey),
			key("AWS_SECRET_ACCESS_KEY", redisv1alpha1.AWSSecretAccessKeyKey),
		}}, nil
	case storage.PersistentVolumeClaim != nil:
		pvc := storage.PersistentVolumeClaim
		return Location{
			Args: []string{fmt.Sprintf("--%s=%s", flag, path.Join(claimDir, pvc.Subdir, name))},
			Volumes: []*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("backup").
				WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(pvc.ClaimName))},
			Mounts: []*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("backup").WithMountPath(claimDir)},
		}, nil
	}
	return Location{}, fmt.Errorf("the backup storage names neither s3 nor persistentVolumeClaim")
}

// passwordEnv is the tool's Redis password, from the cluster's Secret
// (secret, key).
func passwordEnv(secret, key string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(PasswordEnv).WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
		corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
}

// JobInput is what a backup Job is made from beyond the cluster's spec.
type JobInput struct {
	// Name is the Job's name (see JobName).
	Name string
	// Scheduled is when the backup starts.
	Scheduled time.Time
	// Image is the image of the tool.
	Image string
	// Nodes are the addresses (host:port) of the cluster's nodes: the
	// tool reads the dataset from a replica in sync among them.
	Nodes []string
	// Secret and PasswordKey name the cluster's password.
	Secret, PasswordKey string
	// TLSSecret, when not empty, names the Secret of the nodes' TLS: the
	// tool connects with TLS, presents its certificate, and checks the
	// nodes' against ServerName.
	TLSSecret, ServerName string
	// Request, when not empty, is the backup request the Job answers
	// (see RequestAnnotation).
	Request string
}

// Job is the Job that takes one backup of the cluster owner: the tool
// reads the dataset from a replica in sync (the primary when none is),
// stores it at the spec's location, and writes what it did (or why it
// failed) as its termination message. It never writes to a node.
func Job(owner resources.Owner, b *redisv1alpha1.Backup, in JobInput) (*batchv1ac.JobApplyConfiguration, error) {
	loc, err := LocationOf("to", b.BackupStorage, owner.Name)
	if err != nil {
		return nil, err
	}
	timeout := int64(b.TimeoutSeconds)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	args := []string{"save", "--addrs=" + strings.Join(in.Nodes, ","), fmt.Sprintf("--timeout=%ds", timeout)}
	if b.MaxBackups > 0 {
		args = append(args, fmt.Sprintf("--max-backups=%d", b.MaxBackups))
	}
	args = append(args, loc.Args...)
	mounts := append([]*corev1ac.VolumeMountApplyConfiguration{corev1ac.VolumeMount().WithName("tmp").WithMountPath(tmpDir)}, loc.Mounts...)
	volumes := append([]*corev1ac.VolumeApplyConfiguration{corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource())}, loc.Volumes...)
	if in.TLSSecret != "" {
		args = append(args, "--tls-dir="+tlsDir, "--tls-server-name="+in.ServerName)
		mounts = append(mounts, corev1ac.VolumeMount().WithName("tls").WithMountPath(tlsDir).WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName("tls").WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(in.TLSSecret).WithDefaultMode(0o440)))
	}

	annotations := map[string]string{ScheduledAnnotation: in.Scheduled.UTC().Format(time.RFC3339)}
	if in.Request != "" {
		annotations[RequestAnnotation] = in.Request
	}
	job, _ := resources.ToolJob{
		Name:        in.Name,
		Labels:      resources.Labels(Selector(owner.Name)),
		Annotations: annotations,
		Container: corev1ac.Container().
			WithName(ContainerName).
			WithImage(in.Image).
			WithCommand(Tool).
			WithArgs(args...).
			WithEnv(append([]*corev1ac.EnvVarApplyConfiguration{passwordEnv(in.Secret, in.PasswordKey)}, loc.Env...)...).
			WithVolumeMounts(mounts...),
		Volumes:       volumes,
		Timeout:       timeout,
		Retries:       retries,
		PermanentExit: ExitPermanent,
	}.Build(owner)
	return job, nil
}

// RestoreInput is what the restoring init container of a cluster's nodes
// is made from.
type RestoreInput struct {
	// Image is the image of the tool.
	Image string
	// Pod is the node that restores: the others skip.
	Pod string
	// DataVolume and DataDir are the node's data volume and where Redis
	// reads it.
	DataVolume, DataDir string
	// ConfigMap is the cluster's ConfigMap, whose key RestoredKey says the
	// cluster was restored already.
	ConfigMap string
}

// RestoreContainer is the init container of every node of a cluster of
// spec.restore, and the volumes it adds: in the pod in.Pod, on an empty
// data folder, the tool lays the backup out as the base of Redis's
// append-only file, which Redis then loads; anywhere else, on a folder
// with data, and once the cluster has had a primary (RestoredEnv), it does
// nothing. It stays in the template for the cluster's life (spec.restore
// cannot change): taking it out would roll every node.
func RestoreContainer(r *redisv1alpha1.RestoreSource, in RestoreInput) (*corev1ac.ContainerApplyConfiguration, []*corev1ac.VolumeApplyConfiguration) {
	// The source was validated at admission; one with no storage
	// restores nothing and the tool says so.
	loc, _ := LocationOf("from", r.BackupStorage, r.Backup)
	args := append([]string{"restore", "--only-pod=" + in.Pod, "--data-dir=" + in.DataDir}, loc.Args...)
	c := corev1ac.Container().
		WithName(RestoreContainerName).
		WithImage(in.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(Tool).
		WithArgs(args...).
		WithEnv(append([]*corev1ac.EnvVarApplyConfiguration{
			corev1ac.EnvVar().WithName(PodNameEnv).WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
			corev1ac.EnvVar().WithName(RestoredEnv).WithValueFrom(corev1ac.EnvVarSource().
				WithConfigMapKeyRef(corev1ac.ConfigMapKeySelector().WithName(in.ConfigMap).WithKey(RestoredKey).WithOptional(true))),
		}, loc.Env...)...).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithVolumeMounts(append([]*corev1ac.VolumeMountApplyConfiguration{
			corev1ac.VolumeMount().WithName(in.DataVolume).WithMountPath(in.DataDir)}, loc.Mounts...)...).
		WithSecurityContext(resources.ToolSecurity())
	return c, loc.Volumes
}

// AuthContainer is the init container of every node that writes the
// node's password, from the Secret password refers to, as redis.conf
// settings to AuthFile in dir, on volume (of the pod's memory), which
// redis-server includes: the password is then on no command line.
func AuthContainer(image, volume, dir, username string, password *corev1ac.EnvVarSourceApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(AuthContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(Tool).
		WithArgs("auth", "--to="+dir+"/"+AuthFile, "--user="+username).
		WithEnv(corev1ac.EnvVar().WithName(PasswordEnv).WithValueFrom(password)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(volume).WithMountPath(dir)).
		WithSecurityContext(resources.ToolSecurity())
}

// LineageContainer is the init container of every node that reports, as
// its termination message, how far the data in the node's folder got
// before Redis starts (Lineage): after a restart, Redis itself no longer
// says. It runs after a restore, on what the restore laid out.
func LineageContainer(image, dataVolume, dataDir string) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(LineageContainerName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithCommand(Tool).
		WithArgs("lineage", "--data-dir="+dataDir).
		WithTerminationMessagePolicy(corev1.TerminationMessageReadFile).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(dataVolume).WithMountPath(dataDir).WithReadOnly(true)).
		WithSecurityContext(resources.ToolSecurity())
}
