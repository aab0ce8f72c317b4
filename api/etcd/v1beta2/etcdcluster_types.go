package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/switchover"
)

const (
	// DefaultRepository is where a member's image comes from when
	// spec.repository is left out; the image of version V is
	// <repository>:v<V>.
	DefaultRepository = "quay.io/coreos/etcd"
	// MaxSize is the largest spec.size accepted: every member takes part
	// in every write, and more than nine make writes slower, not safer.
	MaxSize = 9
)

// EtcdClusterSpec is the desired state of an etcd cluster: only size and
// version control the number of members and their version.
// +kubebuilder:validation:XValidation:rule="self.version == oldSelf.version || !(int(oldSelf.version.split('.')[0]) == 3 && int(oldSelf.version.split('.')[1]) == 5 && int(oldSelf.version.split('.')[2]) < 20 && int(self.version.split('.')[1]) >= 6)",message="spec.version may move from 3.5 to 3.6 only from 3.5.20 or later (etcd issue 19557: a member promoted from a learner before 3.5.20 comes back from 3.6 as a learner): move to the latest 3.5 patch first"
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="spec.restore can only be set when the EtcdCluster is created"
// +kubebuilder:validation:XValidation:rule="has(self.TLS) || !has(oldSelf.TLS)",message="spec.TLS cannot be removed: the members do not move back from TLS to plain URLs"
// +kubebuilder:validation:XValidation:rule="quantity(has(self.storage) && has(self.storage.size) ? string(self.storage.size) : '4Gi').compareTo(quantity(has(oldSelf.storage) && has(oldSelf.storage.size) ? string(oldSelf.storage.size) : '4Gi')) >= 0",message="spec.storage.size cannot shrink: a claim never gets smaller (left out, it is 4Gi)",fieldPath=".storage"
// +kubebuilder:validation:XValidation:rule="(has(self.storage) && has(self.storage.storageClassName)) == (has(oldSelf.storage) && has(oldSelf.storage.storageClassName)) && (!has(self.storage) || !has(self.storage.storageClassName) || self.storage.storageClassName == oldSelf.storage.storageClassName)",message="spec.storage.storageClassName cannot change: a claim keeps its StorageClass",fieldPath=".storage"
// +kubebuilder:validation:XValidation:rule="!has(self.maintenance) || !has(self.maintenance.backendQuota) || 2 * quantity(string(self.maintenance.backendQuota)).asInteger() + 536870912 <= (has(self.storage) && has(self.storage.size) ? quantity(string(self.storage.size)).asInteger() : 4294967296)",message="spec.maintenance.backendQuota must be at most half of spec.storage.size (4Gi when left out) less 512Mi: the member's claim also holds its write-ahead log and, while it is defragmented, a second copy of its database",fieldPath=".maintenance.backendQuota"
type EtcdClusterSpec struct {
	// Size is the number of members, 1 to 9. The operator changes the
	// membership one member at a time; the /scale subresource works on it
	// (kubectl scale).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Size int32 `json:"size"`

	// Version is the etcd version of every member, MAJOR.MINOR.PATCH
	// (3.6.16). A change rolls one member at a time, to a later patch of
	// the same minor or to the next minor only.
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$`
	Version string `json:"version"`

	// Repository is the image repository of the members: the image of
	// version V is <repository>:v<V>.
	// +optional
	// +kubebuilder:default="quay.io/coreos/etcd"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._/:-][a-z0-9]+)*$`
	Repository string `json:"repository,omitempty"`

	// Pod is the policy of the member pods: where they may run and how
	// they spread over the nodes (by default each on a node of its own,
	// as a preference), their resources, labels, annotations and
	// priority class.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`

	// Storage is the size and StorageClass of each member's claim.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// EtcdOptions are etcd flags the operator does not set itself, each
	// --name=value (--heartbeat-interval=200), written into every member's
	// start-up file. A change reaches a member when its pod restarts.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EtcdOptions []EtcdOption `json:"etcdOptions,omitempty"`

	// Restore starts the cluster from a snapshot: its first member is
	// restored from it, and the others join it one at a time. It is read
	// only while the cluster has never started (an EtcdRestore sets it),
	// and cannot be changed or removed.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.restore cannot change"
	Restore *SnapshotSource `json:"restore,omitempty"`

	// TLS makes the members talk TLS to one another and to their clients,
	// with certificates from the Secrets it names, and accept only
	// clients with a certificate signed by the server Secret's CA. Set on
	// a running cluster, it moves the members to TLS one restart at a time
	// (condition reason EnablingTLS); once set it neither changes nor goes.
	// Its Secrets' contents may be renewed at any time (the members read
	// them on each new connection).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.TLS cannot change: renew the Secrets' contents instead"
	TLS *TLSPolicy `json:"TLS,omitempty"`

	// Maintenance keeps the members' databases small: etcd's periodic
	// compaction, a backend quota, and defragmentation by the operator.
	// Its defaults apply when it is left out. The compaction and the
	// quota are start-up settings: a change reaches a member when it next
	// restarts.
	// +optional
	Maintenance *MaintenancePolicy `json:"maintenance,omitempty"`

	// Hibernate, true, stops every member pod (the StatefulSet at 0
	// replicas) and keeps every claim, Secret and ConfigMap: the members
	// stay in etcd's member list, and no member is added, removed or
	// promoted while the cluster sleeps; no backup is taken. False (or
	// removed) starts the pods again: each member restarts from its data
	// and the cluster forms its quorum again. See docs/kinds.md.
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`
}

// Placement is spec.pod's placement, empty when spec.pod is left out.
func (s *EtcdClusterSpec) Placement() placement.Placement {
	if s.Pod == nil {
		return placement.Placement{}
	}
	return s.Pod.Placement
}

// EtcdMember is one member of the cluster, as etcd's own API reports it.
type EtcdMember struct {
	// Name is the member's name, which is also its pod's.
	Name string `json:"name"`
	// ID is the member's ID in etcd, in hexadecimal.
	ID string `json:"id"`
	// Healthy is whether the member answered the operator's status call.
	// +optional
	Healthy bool `json:"healthy"`
	// Learner is whether the member is a learner: added, catching up, not
	// voting yet.
	// +optional
	Learner bool `json:"learner,omitempty"`
	// Leader is whether the member is the leader.
	// +optional
	Leader bool `json:"leader,omitempty"`
	// Version is the etcd version the member's server reports; empty
	// while it does not answer.
	// +optional
	Version string `json:"version,omitempty"`
	// ClaimUID is the uid of the PersistentVolumeClaim that holds the
	// member's data, recorded while the member is started and healthy on
	// it. A member whose pod comes back on another claim lost its data: it
	// cannot rejoin, and is removed and added again as a new member.
	// +optional
	ClaimUID string `json:"claimUID,omitempty"`
	// AddedAt is when the operator added the member, kept while it has
	// not joined (it has not started, or is a learner): the join timeout
	// counts from it, and a claim made before it held another member's
	// data.
	// +optional
	AddedAt *metav1.Time `json:"addedAt,omitempty"`
	// DefragmentedAt is when the operator last defragmented the member:
	// outside a NOSPACE alarm, not again before
	// spec.maintenance.defragmentation.minInterval has passed.
	// +optional
	DefragmentedAt *metav1.Time `json:"defragmentedAt,omitempty"`
}

// EtcdClusterStatus is the observed state.
type EtcdClusterStatus struct {
	// Size is the number of members etcd reports, learners included.
	// +optional
	Size int32 `json:"size"`
	// Members are the members etcd reports, by name. Until the first
	// member answers, the seed member the operator is starting.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []EtcdMember `json:"members,omitempty"`
	// Leader is the name of the leader.
	// +optional
	Leader string `json:"leader,omitempty"`
	// ClusterID is the ID etcd gave the cluster, in hexadecimal: a pod
	// that answers as a member of another cluster is not counted.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	ClusterID string `json:"clusterID,omitempty"`
	// NoSpaceRemedy is set while the operator frees the space of a
	// cluster that raised its NOSPACE alarm: the compaction it made.
	// +optional
	NoSpaceRemedy *NoSpaceRemedy `json:"noSpaceRemedy,omitempty"`
	// CurrentVersion is the lowest version the members run.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	CurrentVersion string `json:"currentVersion,omitempty"`
	// TargetVersion is the version the members are moving to (spec.version).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	TargetVersion string `json:"targetVersion,omitempty"`
	// Selector selects the member pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// LastSwitchover is the last request to move the leadership (the
	// app-operator/switchover annotation) the operator handled.
	// +optional
	LastSwitchover *switchover.Status `json:"lastSwitchover,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdCluster runs an etcd cluster: a StatefulSet of member pods, a
// headless Service through which the members find each other, a client
// Service, the ConfigMap of the membership new members join, and a
// PodDisruptionBudget that keeps a quorum.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:resource:categories=all,shortName=etcd
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.spec.version == oldSelf.spec.version || (has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Ready' && c.reason == 'VersionUnsupported')) || (int(self.spec.version.split('.')[0]) == int(oldSelf.spec.version.split('.')[0]) && ((int(self.spec.version.split('.')[1]) == int(oldSelf.spec.version.split('.')[1]) && int(self.spec.version.split('.')[2]) >= int(oldSelf.spec.version.split('.')[2])) || int(self.spec.version.split('.')[1]) == int(oldSelf.spec.version.split('.')[1]) + 1))",message="spec.version may only move to a later patch of the same minor or to the next minor version (no downgrade, no skipped minor, no major change); a version the operator refused (Ready=False VersionUnsupported), for which nothing runs, may move to any",fieldPath=".spec.version"
// +kubebuilder:validation:XValidation:rule="self.spec.version == oldSelf.spec.version || !has(oldSelf.status) || !has(oldSelf.status.currentVersion) || !oldSelf.status.currentVersion.matches('^[0-9]+[.][0-9]+[.][0-9]+$') || (int(self.spec.version.split('.')[0]) == int(oldSelf.status.currentVersion.split('.')[0]) && ((int(self.spec.version.split('.')[1]) == int(oldSelf.status.currentVersion.split('.')[1]) && int(self.spec.version.split('.')[2]) >= int(oldSelf.status.currentVersion.split('.')[2])) || (int(self.spec.version.split('.')[1]) == int(oldSelf.status.currentVersion.split('.')[1]) + 1 && !(int(oldSelf.status.currentVersion.split('.')[0]) == 3 && int(oldSelf.status.currentVersion.split('.')[1]) == 5 && int(oldSelf.status.currentVersion.split('.')[2]) < 20))))",message="spec.version must be reachable in one step from the version the members run (status.currentVersion): an upgrade in progress may go on to a later patch of its target, but not to a further minor version before it is done"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 40",message="metadata.name must be a DNS label of at most 40 characters (lowercase letters, digits and '-', starting with a letter): it names the Services and, with the member's number, the pods"
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EtcdClusterSpec   `json:"spec"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

// GetConditions returns the status conditions.
func (e *EtcdCluster) GetConditions() []metav1.Condition { return e.Status.Conditions }

// SetConditions replaces status.conditions.
func (e *EtcdCluster) SetConditions(c []metav1.Condition) { e.Status.Conditions = c }
