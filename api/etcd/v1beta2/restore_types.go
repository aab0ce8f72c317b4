package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotSource is the snapshot a new cluster's first member starts
// from.
// +kubebuilder:validation:XValidation:rule="self.backupStorageType != 'S3' || (has(self.s3) && !has(self.persistentVolumeClaim))",message="backupStorageType S3 needs s3, and no persistentVolumeClaim"
// +kubebuilder:validation:XValidation:rule="self.backupStorageType != 'PersistentVolumeClaim' || (has(self.persistentVolumeClaim) && !has(self.s3))",message="backupStorageType PersistentVolumeClaim needs persistentVolumeClaim, and no s3"
type SnapshotSource struct {
	// BackupStorageType says where the snapshot is: S3 or
	// PersistentVolumeClaim.
	// +required
	BackupStorageType BackupStorageType `json:"backupStorageType"`

	BackupLocation `json:",inline"`
}

// EtcdClusterRef names an EtcdCluster of the same namespace.
type EtcdClusterRef struct {
	// Name is the EtcdCluster's name.
	// +required
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// EtcdRestoreSpec is a new etcd cluster made from a snapshot: its first
// member restored from the snapshot, the others added one at a time. A
// restore never touches a cluster that exists.
// +kubebuilder:validation:XValidation:rule="!has(self.clusterSpec.restore)",message="spec.clusterSpec.restore must be left out: the restore sets it from the spec's snapshot source"
type EtcdRestoreSpec struct {
	SnapshotSource `json:",inline"`

	// EtcdCluster names the EtcdCluster the restore creates. No
	// EtcdCluster of that name may exist: the restore fails rather than
	// touch it.
	// +required
	EtcdCluster EtcdClusterRef `json:"etcdCluster"`

	// ClusterSpec is the spec of the EtcdCluster created: its size and
	// version (the snapshot's etcd version, or the next minor).
	// +required
	ClusterSpec EtcdClusterSpec `json:"clusterSpec"`
}

// EtcdRestoreStatus is how far the restore is.
type EtcdRestoreStatus struct {
	// Succeeded is whether the restored cluster has come up: Ready, with
	// every member of its spec.
	// +optional
	Succeeded bool `json:"succeeded"`
	// Reason says why the restore failed or waits; empty once it
	// succeeded.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Backup is the snapshot the restore took, as the snapshot tool
	// reports it (s3://<bucket>/<key>, or its path on the claim): for a
	// prefix, the one it chose. Empty until the first member restored it.
	// +optional
	Backup string `json:"backup,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (the restored cluster is Ready), Progressing and
	// Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdRestore creates an EtcdCluster from a snapshot of an EtcdBackup.
// The cluster it creates is not its child: deleting the EtcdRestore
// leaves the cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.etcdCluster.name`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.backupStorageType`
// +kubebuilder:printcolumn:name="Succeeded",type=boolean,JSONPath=`.status.succeeded`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="spec cannot change: a restore is done once; create another EtcdRestore"
type EtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EtcdRestoreSpec   `json:"spec"`
	Status EtcdRestoreStatus `json:"status,omitempty"`
}

// EtcdRestoreList is a list of EtcdRestore.
// +kubebuilder:object:root=true
type EtcdRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdRestore `json:"items"`
}

// GetConditions returns the status conditions.
func (r *EtcdRestore) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions replaces status.conditions.
func (r *EtcdRestore) SetConditions(c []metav1.Condition) { r.Status.Conditions = c }
