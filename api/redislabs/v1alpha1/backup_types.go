package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// DefaultBackupInterval is the time between two backups, in seconds,
	// when spec.backup.interval is left out: a day.
	DefaultBackupInterval = 86400
	// MinBackupInterval is the shortest interval accepted.
	MinBackupInterval = 60
	// AWSAccessKeyIDKey and AWSSecretAccessKeyKey are the keys of an S3
	// credentials Secret, as in the Redis Enterprise database's backup.
	AWSAccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	AWSSecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// Backup backs the dataset up on a schedule, in the shape of the Redis
// Enterprise database's spec.backup: every interval the dataset is read
// from a replica in sync with the primary (the primary when none is) as
// an RDB file and stored in S3 or on a claim. A backup never pauses the
// cluster, and one that fails is reported in status.backupInfo.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.persistentVolumeClaim)",message="exactly one of spec.backup.s3 and spec.backup.persistentVolumeClaim must be set"
type Backup struct {
	// Interval is the time between two backups, in seconds: a day when
	// left out, at least 60.
	// +optional
	// +kubebuilder:default=86400
	// +kubebuilder:validation:Minimum=60
	Interval int32 `json:"interval,omitempty"`
	// MaxBackups is how many backups of this cluster are kept, the oldest
	// deleted first; all of them when left out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxBackups int32 `json:"maxBackups,omitempty"`
	// TimeoutSeconds bounds one backup, 600 s when left out: a backup that
	// takes longer fails and is reported.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	BackupStorage  `json:",inline"`
}

// BackupStorage is where backups are kept: one of its fields.
type BackupStorage struct {
	// S3 keeps the backups in an S3 bucket, or an S3-compatible store.
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`
	// PersistentVolumeClaim keeps the backups on a claim of this
	// namespace.
	// +optional
	PersistentVolumeClaim *ClaimStorage `json:"persistentVolumeClaim,omitempty"`
}

// S3Storage is an S3 bucket, as the Redis Enterprise database's backup
// names one, and the store it is in.
type S3Storage struct {
	// AWSSecretName names the Secret of this namespace that holds the
	// credentials, under the keys AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AWSSecretName string `json:"awsSecretName"`
	// BucketName is the bucket: 3 to 63 lowercase letters, digits, '.'
	// and '-', as S3 requires.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`
	BucketName string `json:"bucketName"`
	// Subdir is the folder in the bucket the backups go into; the
	// bucket's root when left out.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(p, p == '..' || p == '.')",message="subdir must have no '.' or '..' part"
	Subdir string `json:"subdir,omitempty"`
	// Endpoint is the URL of an S3-compatible store; AWS when left out.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+(/.*)?$`
	Endpoint string `json:"endpoint,omitempty"`
	// ForcePathStyle addresses the bucket in the path
	// (http://endpoint/bucket) rather than in the host name, as most
	// S3-compatible stores need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// ClaimStorage is a folder on a PersistentVolumeClaim.
type ClaimStorage struct {
	// ClaimName names the PersistentVolumeClaim of this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName"`
	// Subdir is the folder on the claim the backups go into; the claim's
	// root when left out.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(p, p == '..' || p == '.')",message="subdir must have no '.' or '..' part"
	Subdir string `json:"subdir,omitempty"`
}

// RestoreSource is the backup a new cluster starts from.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.persistentVolumeClaim)",message="exactly one of spec.restore.s3 and spec.restore.persistentVolumeClaim must be set"
type RestoreSource struct {
	// Backup is the backup's name under the subdir, as
	// status.backupInfo.lastBackup ends, or the name of the cluster it
	// was taken from, for that cluster's newest backup there.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+$`
	Backup        string `json:"backup"`
	BackupStorage `json:",inline"`
}

// BackupNowAnnotation, set on a RedisEnterpriseCluster that has
// spec.backup, asks for a backup now, beside the schedule. Its value is a
// request ID of the user's choice: a value already handled
// (status.backupInfo.lastRequest) is not acted on again, so a second
// backup takes a new ID.
const BackupNowAnnotation = "app-operator/backup"

// EventBackupRefused is the reason of the Warning event of a backup
// request (BackupNowAnnotation) the operator refused: the cluster has no
// spec.backup.
const EventBackupRefused = "BackupRefused"

// Backup statuses, as status.backupInfo.backupStatus reports them.
const (
	BackupStatusScheduled = "Scheduled"
	BackupStatusRunning   = "Running"
	BackupStatusSucceeded = "Succeeded"
	BackupStatusFailed    = "Failed"
)

// BackupInfo is what the operator knows of the periodic backup, in the
// shape of the Redis Enterprise database's status.backupInfo.
type BackupInfo struct {
	// BackupStatus is the last backup's: Scheduled (none has run yet),
	// Running, Succeeded or Failed.
	// +optional
	BackupStatus string `json:"backupStatus,omitempty"`
	// BackupFailureReason says why the last backup failed, when it did.
	// +optional
	BackupFailureReason string `json:"backupFailureReason,omitempty"`
	// BackupInterval is the interval in force, in seconds.
	// +optional
	BackupInterval int32 `json:"backupInterval,omitempty"`
	// LastBackupTime is when the last successful backup read the dataset.
	// +optional
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`
	// LastBackup is where the last successful backup is: s3://bucket/key,
	// or its path on the claim.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// ReplicationOffset is the replication offset the last successful
	// backup holds every write up to.
	// +optional
	ReplicationOffset int64 `json:"replicationOffset,omitempty"`
	// LastScheduleTime is when the last backup started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastRequest is the last app-operator/backup annotation value the
	// operator handled: a backup was started for it, or refused (see the
	// cluster's events).
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
}

// Every is the time between two backups: interval, or
// DefaultBackupInterval when it is left out.
func (b *Backup) Every() time.Duration {
	n := b.Interval
	if n <= 0 {
		n = DefaultBackupInterval
	}
	return time.Duration(n) * time.Second
}
