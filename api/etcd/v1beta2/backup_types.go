package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupStorageType is where snapshots are kept.
// +kubebuilder:validation:Enum=S3;PersistentVolumeClaim
type BackupStorageType string

const (
	// BackupStorageTypeS3 keeps the snapshots in an S3 bucket (spec.s3).
	BackupStorageTypeS3 BackupStorageType = "S3"
	// BackupStorageTypePersistentVolumeClaim keeps the snapshots on a
	// PersistentVolumeClaim (spec.persistentVolumeClaim).
	BackupStorageTypePersistentVolumeClaim BackupStorageType = "PersistentVolumeClaim"
)

const (
	// AWSSecretCredentialsFileName is the key of an S3 credentials
	// Secret: an AWS shared credentials file whose [default] profile
	// holds aws_access_key_id and aws_secret_access_key.
	AWSSecretCredentialsFileName = "credentials"
	// DefaultBackupTimeout is how long one backup may take when
	// spec.backupPolicy.timeoutInSecond is left out.
	DefaultBackupTimeout = 600
)

// BackupLocation is where snapshots are kept: the one of its fields the
// storage type names.
type BackupLocation struct {
	// S3 keeps the snapshots in an S3 bucket, or an S3-compatible store.
	// +optional
	S3 *S3BackupSource `json:"s3,omitempty"`
	// PersistentVolumeClaim keeps the snapshots on a claim of this
	// namespace.
	// +optional
	PersistentVolumeClaim *PVCBackupSource `json:"persistentVolumeClaim,omitempty"`
}

// S3BackupSource is where in S3 the snapshots are.
type S3BackupSource struct {
	// Path is <bucket>/<prefix>: every snapshot is stored as
	// <prefix>_c<cluster ID>_v<revision>_<time>. A restore from a path
	// takes that exact snapshot, or the newest under that prefix (that of
	// the cluster that wrote the latest backup).
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^/]+(/[^/]+)*$`
	Path string `json:"path"`
	// AWSSecret names the Secret of this namespace that holds the
	// credentials: the key "credentials", an AWS shared credentials file
	// whose [default] profile has aws_access_key_id and
	// aws_secret_access_key.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AWSSecret string `json:"awsSecret"`
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

// PVCBackupSource is where on a PersistentVolumeClaim the snapshots are.
type PVCBackupSource struct {
	// ClaimName names the PersistentVolumeClaim of this namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClaimName string `json:"claimName"`
	// Path is the prefix of the snapshots on the claim, relative to its
	// root: every snapshot is stored as <path>_c<cluster ID>_v<revision>_<time>.
	// +required
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(p, p == '..' || p == '.')",message="spec.persistentVolumeClaim.path must stay on the claim: no '.' or '..' part"
	Path string `json:"path"`
}

// BackupPolicy says how often to back up and how many snapshots to keep.
type BackupPolicy struct {
	// TimeoutInSecond bounds one backup, 600 s when left out: a backup
	// that takes longer fails and is reported.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutInSecond int64 `json:"timeoutInSecond,omitempty"`
	// BackupIntervalInSecond makes the backup periodic: a snapshot every
	// that many seconds. Left out, the backup is taken once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	BackupIntervalInSecond int64 `json:"backupIntervalInSecond,omitempty"`
	// MaxBackups is how many snapshots of this backup are kept, the
	// oldest deleted first; all of them when left out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxBackups int32 `json:"maxBackups,omitempty"`
}

// EtcdBackupSpec is a backup of an etcd cluster: a snapshot taken from
// the member furthest along, once or periodically, kept in S3 or on a
// PersistentVolumeClaim.
// +kubebuilder:validation:XValidation:rule="has(self.clusterName) != has(self.etcdEndpoints)",message="exactly one of spec.clusterName and spec.etcdEndpoints must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.etcdEndpoints) || has(self.clientTLSSecret) || self.etcdEndpoints.all(e, e.startsWith('http://'))",message="spec.etcdEndpoints of https need spec.clientTLSSecret"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'S3' || (has(self.s3) && !has(self.persistentVolumeClaim))",message="spec.storageType S3 needs spec.s3, and no spec.persistentVolumeClaim"
// +kubebuilder:validation:XValidation:rule="self.storageType != 'PersistentVolumeClaim' || (has(self.persistentVolumeClaim) && !has(self.s3))",message="spec.storageType PersistentVolumeClaim needs spec.persistentVolumeClaim, and no spec.s3"
type EtcdBackupSpec struct {
	// ClusterName names the EtcdCluster of this namespace to back up.
	// +optional
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	ClusterName string `json:"clusterName,omitempty"`
	// EtcdEndpoints are the client URLs of the members of an etcd cluster
	// the operator does not run, at the place of spec.clusterName.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^https?://[^\s/]+$`
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	// ClientTLSSecret names the Secret of this namespace with the client
	// certificate the backup presents to the members (tls.crt, tls.key
	// and ca.crt, the layout cert-manager writes). For a cluster of
	// spec.clusterName with TLS, its spec.TLS.static.operatorSecret when
	// left out; https endpoints need it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClientTLSSecret string `json:"clientTLSSecret,omitempty"`
	// StorageType says where the snapshots are kept: S3 or
	// PersistentVolumeClaim.
	// +required
	StorageType BackupStorageType `json:"storageType"`
	// BackupPolicy: how often, how long, how many kept. Left out, one
	// snapshot is taken, and kept.
	// +optional
	BackupPolicy *BackupPolicy `json:"backupPolicy,omitempty"`

	BackupLocation `json:",inline"`

	// Pod is where the backup Jobs' pods run: spec.pod.nodeSelector and
	// spec.pod.tolerations (spec.pod.spread has nothing to spread: one pod
	// at a time).
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`
}

// EtcdBackupStatus is what the backups did.
type EtcdBackupStatus struct {
	// Succeeded is whether the last backup succeeded.
	// +optional
	Succeeded bool `json:"succeeded"`
	// Reason says why the last backup failed; empty after a success.
	// +optional
	Reason string `json:"reason,omitempty"`
	// EtcdVersion is the version of the member the last snapshot came
	// from.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// EtcdRevision is the revision of etcd's key space when the last
	// snapshot was begun: every write acknowledged at or before it is in
	// it (with, it may be, a few acknowledged while it was read).
	// +optional
	EtcdRevision int64 `json:"etcdRevision,omitempty"`
	// LastSuccessDate is when the last snapshot that succeeded was taken.
	// +optional
	LastSuccessDate *metav1.Time `json:"lastSuccessDate,omitempty"`
	// LastBackup is where the last snapshot that succeeded is: its S3
	// key or its path on the claim.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// LastScheduleTime is when the last backup started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the last backup succeeded), Progressing (a
	// backup runs) and Degraded (the last backup failed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackup takes snapshots of an etcd cluster, each by a Job that
// reads it from the member furthest along and stores it, never changing
// the cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storageType`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.etcdRevision`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessDate`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 40",message="metadata.name must be a DNS label of at most 40 characters: it names the backup's Jobs"
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EtcdBackupSpec   `json:"spec"`
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupList is a list of EtcdBackup.
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

// GetConditions returns the status conditions.
func (b *EtcdBackup) GetConditions() []metav1.Condition { return b.Status.Conditions }

// SetConditions replaces status.conditions.
func (b *EtcdBackup) SetConditions(c []metav1.Condition) { b.Status.Conditions = c }

// Timeout is how long one backup may take, in seconds.
func (s *EtcdBackupSpec) Timeout() int64 {
	if s.BackupPolicy == nil || s.BackupPolicy.TimeoutInSecond == 0 {
		return DefaultBackupTimeout
	}
	return s.BackupPolicy.TimeoutInSecond
}

// Interval is the seconds between two backups; 0 for a backup taken once.
func (s *EtcdBackupSpec) Interval() int64 {
	if s.BackupPolicy == nil {
		return 0
	}
	return s.BackupPolicy.BackupIntervalInSecond
}
