package v1alpha1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/app-operator/app-operator/api/placement"
	"github.com/app-operator/app-operator/api/switchover"
)

// The defaults of the optional fields. The CRD carries the same values (see
// the markers below); the builder falls back to them too, for a resource
// that never went through the API server (the offline preview).
const (
	// DefaultNodes is the smallest cluster: a primary and two replicas.
	DefaultNodes = 3
	// MaxNodes is the largest spec.nodes accepted.
	MaxNodes = 9
	// DefaultUsername is the Redis Enterprise operator's default user.
	DefaultUsername = "demo@redislabs.com"
	// DefaultRepository and DefaultVersionTag name the Redis image: the
	// official open-source image, at the version the local cluster's
	// stand-in runs (Debian 12's redis-server). The operator's --redis-image
	// replaces it (a private registry's mirror): see docs/images.md.
	DefaultRepository = "redis"
	DefaultVersionTag = "7.0.15"
	// DefaultVolumeSize is the size of each node's volume when persistence
	// is on and spec.persistentSpec.volumeSize is left out.
	DefaultVolumeSize = "1Gi"
)

// RedisEnterpriseClusterSpec is the desired state: `nodes` Redis servers,
// one primary and the others its replicas.
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="spec.restore can only be set when the RedisEnterpriseCluster is created"
// +kubebuilder:validation:XValidation:rule="has(self.tls) || !has(oldSelf.tls)",message="spec.tls cannot be removed: the nodes do not move back from TLS to plain connections"
// +kubebuilder:validation:XValidation:rule="!has(self.hibernate) || !self.hibernate || has(self.persistentSpec)",message="spec.hibernate needs spec.persistentSpec.enabled: without persistence every node keeps its data in an emptyDir, and hibernation would lose it all"
// +kubebuilder:validation:XValidation:rule="quantity(has(self.persistentSpec) && has(self.persistentSpec.volumeSize) ? string(self.persistentSpec.volumeSize) : '1Gi').compareTo(quantity(has(oldSelf.persistentSpec) && has(oldSelf.persistentSpec.volumeSize) ? string(oldSelf.persistentSpec.volumeSize) : '1Gi')) >= 0",message="spec.persistentSpec.volumeSize cannot shrink: a claim never gets smaller (left out, it is 1Gi)",fieldPath=".persistentSpec"
type RedisEnterpriseClusterSpec struct {
	// Nodes is the number of Redis servers: one primary, the others its
	// replicas. Odd, and at least 3, as in Redis Enterprise, so that a
	// primary always has a replica to hand over to.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=9
	// +kubebuilder:validation:XValidation:rule="self % 2 == 1",message="spec.nodes must be odd (3, 5, 7 or 9)"
	Nodes int32 `json:"nodes,omitempty"`

	// PersistentSpec keeps each node's data set on a PersistentVolumeClaim
	// of the StatefulSet, which outlives the node's pod.
	// +optional
	PersistentSpec *PersistentSpec `json:"persistentSpec,omitempty"`

	// UIServiceType is the type of the `<name>-ui` Service, which serves
	// the cluster's console (spec.console): a web console on port 8443
	// (`ui`) and a REST API on 9443 (`api`), both over TLS. Clients reach
	// Redis through the ClusterIP Service `<name>`.
	// +optional
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	UIServiceType corev1.ServiceType `json:"uiServiceType,omitempty"`

	// Console is the cluster's web console and REST API, served on the
	// `<name>-ui` Service by a Deployment of the operator's image that may
	// read this cluster only. On unless turned off.
	// +optional
	Console *Console `json:"console,omitempty"`

	// Username is the Redis user the cluster's Secret names, with a
	// password the operator generates once. It may log in with AUTH
	// <username> <password>; the default user takes the same password.
	// +optional
	// +kubebuilder:default="demo@redislabs.com"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^\s<>"]+$`
	Username string `json:"username,omitempty"`

	// RedisEnterpriseNodeResources are each Redis container's requests and
	// limits.
	// +optional
	RedisEnterpriseNodeResources *NodeResources `json:"redisEnterpriseNodeResources,omitempty"`

	// RedisEnterpriseImageSpec names the Redis image (open-source Redis,
	// redis:7.0.15 by default). Redis Enterprise's image (redislabs/redis)
	// is not run: the operator runs its open-source image in its place, and
	// says so (condition ImageReplaced). A change rolls the nodes: the
	// replicas first, the primary last, after it hands over.
	// +optional
	RedisEnterpriseImageSpec *ImageSpec `json:"redisEnterpriseImageSpec,omitempty"`

	// Placement: the node selector and tolerations of the Redis pods, and
	// how they spread over the nodes (by default each on a node of its
	// own, as a preference).
	placement.Placement `json:",inline"`

	// Backup backs the dataset up on a schedule, to S3 or a claim.
	// +optional
	Backup *Backup `json:"backup,omitempty"`

	// Restore starts a new cluster from a backup: the first node loads
	// it before Redis starts, is elected the primary (it is the node
	// furthest along), and the others sync from it. It can only be set
	// when the cluster is created.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.restore cannot change"
	Restore *RestoreSource `json:"restore,omitempty"`

	// TLS makes every node serve TLS alone on its port (a plain
	// connection is refused) and replicate over TLS, with the certificate
	// of the Secret it names. Set on a running cluster, it rolls the nodes
	// to TLS one at a time, the primary last after a handover; once set
	// it neither changes nor goes. The Secret's contents may be renewed at
	// any time (the operator has each node reload them).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.tls cannot change: renew the Secret's contents instead"
	TLS *TLS `json:"tls,omitempty"`

	// Hibernate, true, stops every node (the StatefulSet at 0 replicas)
	// and keeps every claim and Secret; no failover, election or backup
	// while the cluster sleeps. False (or removed) starts the nodes again,
	// and the primary is the node that holds every acknowledged write (the
	// election's rules). Only with persistence on
	// (spec.persistentSpec.enabled): without it the nodes' data is in
	// emptyDirs, lost with the pods, and hibernation is refused.
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`

	// RedisConfig sets redis.conf parameters of every node (see
	// RedisConfig): those Redis takes at run time are applied without a
	// restart.
	// +optional
	RedisConfig RedisConfig `json:"redisConfig,omitempty"`
}

// TLS is the TLS of a cluster's nodes.
type TLS struct {
	// SecretName names a Secret of this namespace with tls.crt, tls.key
	// and ca.crt, the layout cert-manager writes: the certificate every
	// node presents, to clients and to the other nodes, valid for
	// <name>.<namespace>.svc (the primary's Service) and for server and
	// client authentication; and the CA that signed it, and that a
	// client's certificate, when it presents one, must come from. Left
	// out, the operator issues that certificate into the Secret
	// <name>-tls, from a CA of the cluster's own (Secret <name>-tls-ca),
	// and issues it anew a month before it expires.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`
}

// PersistentSpec selects the nodes' storage.
type PersistentSpec struct {
	// Enabled turns persistence on: true or false, or the strings 'true'
	// and 'false'. Off, each node keeps its data in an emptyDir, lost with
	// its pod.
	// +optional
	Enabled *Flag `json:"enabled,omitempty"`

	// StorageClassName is the StorageClass of the nodes' volumes; the
	// cluster's default class when left out.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	StorageClassName string `json:"storageClassName,omitempty"`

	// VolumeSize is the size each node's volume asks for (1Gi when left
	// out). It may grow, never shrink: a larger size grows every claim in
	// place, one at a time, where the StorageClass allows volume
	// expansion.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.persistentSpec.volumeSize must be positive"
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
}

// Flag is a boolean written either as a bool (true) or, as in the Redis
// Enterprise operator's early samples, as a string ('true').
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:Schemaless
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:Enum=true;false;"true";"false"
type Flag struct {
	// Value is the boolean.
	Value bool `json:"-"`
	// AsString is whether it was written as a string.
	AsString bool `json:"-"`
}

// True returns whether f is set and true.
func (f *Flag) True() bool { return f != nil && f.Value }

// MarshalJSON writes f as it was written.
func (f Flag) MarshalJSON() ([]byte, error) {
	if f.AsString {
		return json.Marshal(fmt.Sprint(f.Value))
	}
	return json.Marshal(f.Value)
}

// UnmarshalJSON reads a bool, or one of the strings "true" and "false".
func (f *Flag) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		*f = Flag{Value: b}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a flag is true or false, or the string 'true' or 'false': %s", data)
	}
	switch s {
	case "true", "false":
		*f = Flag{Value: s == "true", AsString: true}
		return nil
	}
	return fmt.Errorf("a flag is true or false, or the string 'true' or 'false': %q", s)
}

// Console is the console of a RedisEnterpriseCluster.
type Console struct {
	// Enabled runs the console; false deletes it (its Deployment, service
	// account, Role and RoleBinding). Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// Resources are the console container's limits and requests, in
	// place of the defaults (requests of 10m CPU and 32Mi memory, a
	// memory limit of 64Mi).
	// +optional
	Resources *NodeResources `json:"resources,omitempty"`
}

// NodeResources are a Redis container's requests and limits. A value is a
// quantity (400m, 4Gi, 2); spaces in it are ignored, so that `4 Gi` reads
// as 4Gi.
type NodeResources struct {
	// Limits are the most the container may use.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Limits map[corev1.ResourceName]Quantity `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the container.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	Requests map[corev1.ResourceName]Quantity `json:"requests,omitempty"`
}

// Quantity is a resource value: a quantity (400m, 4Gi), in which spaces
// are ignored (`4 Gi` is 4Gi), or an integer; never negative. A request
// above its limit is refused when the cluster is reconciled.
// +kubebuilder:validation:Schemaless
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^ *\+?([0-9]+(\.[0-9]*)?|\.[0-9]+) *(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)))? *$`
// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="must not be negative"
type Quantity struct {
	intstr.IntOrString `json:",inline"`
}

// ImageSpec names the Redis image: repository:versionTag.
type ImageSpec struct {
	// Repository is the image's repository.
	// +optional
	// +kubebuilder:default="redis"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9._/:]*[a-z0-9])?$`
	Repository string `json:"repository,omitempty"`
	// VersionTag is the image's tag.
	// +optional
	// +kubebuilder:default="7.0.15"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`
	VersionTag string `json:"versionTag,omitempty"`
	// ImagePullPolicy is the containers' pull policy.
	// +optional
	// +kubebuilder:default=IfNotPresent
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
}

// ClusterState is the cluster's state, in the Redis Enterprise operator's
// words.
// +kubebuilder:validation:Enum=BootstrappingFirstPod;Initializing;Running;RunningRollingUpdate;Hibernated;Error
type ClusterState string

// The states.
const (
	// StateBootstrappingFirstPod: no primary has been chosen yet.
	StateBootstrappingFirstPod ClusterState = "BootstrappingFirstPod"
	// StateInitializing: a primary is chosen; nodes are starting, syncing,
	// or being given their roles, or a failover is under way.
	StateInitializing ClusterState = "Initializing"
	// StateRunning: one primary, every replica synced, every pod current.
	StateRunning ClusterState = "Running"
	// StateRunningRollingUpdate: nodes are being replaced with a new pod
	// template, replicas first.
	StateRunningRollingUpdate ClusterState = "RunningRollingUpdate"
	// StateHibernated: spec.hibernate is true: no node runs (or the last
	// are stopping; see the Ready condition).
	StateHibernated ClusterState = "Hibernated"
	// StateError: the cluster cannot converge without help (see the Ready
	// condition).
	StateError ClusterState = "Error"
)

// Node roles, as status.nodes reports them.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
	// RoleUnknown: the node did not answer.
	RoleUnknown = "unknown"
)

// NodeStatus is what the operator last saw of one Redis node.
type NodeStatus struct {
	// Name is the node's pod.
	Name string `json:"name"`
	// Role is primary, replica, or unknown when the node did not answer.
	Role string `json:"role"`
	// Healthy is whether the pod is ready and Redis answered with the role
	// the operator gave it (a replica: with its link to the primary up).
	Healthy bool `json:"healthy"`
}

// MaxPrimaryHistory is how many primary changes status.primaryHistory
// keeps.
const MaxPrimaryHistory = 10

// The reasons of a PrimaryChange.
const (
	// PrimaryChangeFailover: the primary was lost, and another node
	// promoted.
	PrimaryChangeFailover = "Failover"
	// PrimaryChangeSwitchover: asked for by the app-operator/switchover
	// annotation.
	PrimaryChangeSwitchover = "Switchover"
	// PrimaryChangeHandover: the operator moved the primary to restart or
	// update its pod, or off a node being drained or scaled away.
	PrimaryChangeHandover = "Handover"
)

// PrimaryChange is one change of the cluster's primary.
type PrimaryChange struct {
	// From is the node that was the primary.
	From string `json:"from"`
	// To is the node that became the primary.
	To string `json:"to"`
	// Reason is why: Failover (the primary was lost), Switchover (asked
	// for by the app-operator/switchover annotation) or Handover (the
	// operator moved it to restart or update the old primary's pod).
	Reason string `json:"reason"`
	// Time is when the operator made the change.
	Time metav1.Time `json:"time"`
}

// RedisEnterpriseClusterStatus is the observed state.
type RedisEnterpriseClusterStatus struct {
	// State is the cluster's state: BootstrappingFirstPod, Initializing,
	// Running, RunningRollingUpdate, Hibernated or Error.
	// +optional
	State ClusterState `json:"state,omitempty"`
	// Primary is the pod the operator made the primary. Every other node is
	// configured, at boot and at run time, as its replica.
	// +optional
	Primary string `json:"primary,omitempty"`
	// Nodes are the Redis nodes, by pod name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []NodeStatus `json:"nodes,omitempty"`
	// ObservedGeneration is the generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// BackupInfo is what the operator knows of the periodic backup (see
	// spec.backup).
	// +optional
	BackupInfo *BackupInfo `json:"backupInfo,omitempty"`
	// LastSwitchover is the last switchover request (the
	// app-operator/switchover annotation) the operator handled.
	// +optional
	LastSwitchover *switchover.Status `json:"lastSwitchover,omitempty"`
	// PrimaryHistory is the last changes of the primary, newest first (at
	// most ten).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	PrimaryHistory []PrimaryChange `json:"primaryHistory,omitempty"`
	// Conditions: Ready, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RedisEnterpriseCluster runs Redis the Redis way: a StatefulSet of `nodes`
// Redis servers, one primary and the others its replicas, whose roles the
// operator sets through Redis (electing a new primary when the primary's
// pod fails, fencing a stale one), a Secret with the credentials, and
// Services for the primary (`<name>`) and the nodes, and a `<name>-ui`
// Service that serves the cluster's console (spec.console).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=all,shortName=rec
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.spec.nodes`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && self.metadata.name.size() <= 50",message="metadata.name must be a DNS label of at most 50 characters (lowercase letters, digits and '-', starting with a letter): it names the StatefulSet, its pods and the Services"
type RedisEnterpriseCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   RedisEnterpriseClusterSpec   `json:"spec"`
	Status RedisEnterpriseClusterStatus `json:"status,omitempty"`
}

// RedisEnterpriseClusterList is a list of RedisEnterpriseCluster.
// +kubebuilder:object:root=true
type RedisEnterpriseClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisEnterpriseCluster `json:"items"`
}

// GetConditions returns the status conditions.
func (r *RedisEnterpriseCluster) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions replaces status.conditions.
func (r *RedisEnterpriseCluster) SetConditions(c []metav1.Condition) { r.Status.Conditions = c }

// Reasons of the conditions of a RedisEnterpriseCluster beyond the shared
// ones (api/conditions).
const (
	// ReasonNoPrimary: the primary is down and no node can be promoted.
	ReasonNoPrimary = "NoPrimary"
	// ReasonBootstrapping: no primary has been chosen yet.
	ReasonBootstrapping = "Bootstrapping"
	// ReasonInitializing: nodes are starting, syncing or being given their
	// roles, or a failover is under way.
	ReasonInitializing = "Initializing"
	// ReasonRollingUpdate: the nodes are being replaced with a new template.
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonPrimaryUnreachable: the operator cannot reach the primary, but
	// its replicas still stream from it: no failover.
	ReasonPrimaryUnreachable = "PrimaryUnreachable"
	// ReasonFailoverPending: the primary is down, for less than the
	// failover window so far.
	ReasonFailoverPending = "FailoverPending"
	// ReasonNodeSilent: a failover waits for a node that does not answer,
	// which may hold acknowledged writes the others lack.
	ReasonNodeSilent = "NodeSilent"
	// ReasonNoReplicaInSync: the primary answers, but no replica is in
	// sync with it (its link down, or nothing heard from the primary for
	// a few seconds): a write that waits for a replica is not
	// acknowledged, and the primary refuses writes once its replicas lag
	// by 10 s.
	ReasonNoReplicaInSync = "NoReplicaInSync"
	// ReasonReplicaBehind: the primary takes writes through a replica in
	// sync, but another replica is not in sync with it.
	ReasonReplicaBehind = "ReplicaBehind"
	// ReasonPrimaryBusy: the primary answers BUSY, running a script past
	// Redis's busy threshold: the operator sends SCRIPT KILL.
	ReasonPrimaryBusy = "PrimaryBusy"
	// ReasonElectionHeld: a primary must be elected, but the operator
	// cannot prove which node holds every acknowledged write (nodes that
	// restarted without a record of how far they got, or histories that
	// cannot be ordered): it elects none until a person chooses one with
	// ElectAnnotation.
	ReasonElectionHeld = "ElectionHeld"
	// ReasonSecretMissing: a Secret holding what the running nodes share
	// (the password Secret, or the CA Secret the operator issues their
	// certificates from) is missing while the cluster has pods or claims:
	// the operator makes none anew, which the nodes would refuse, until a
	// person restores it.
	ReasonSecretMissing = "SecretMissing"
)

// ElectAnnotation, set on a RedisEnterpriseCluster to the name of a node's
// pod, a slash and the ID of a hold (ReasonElectionHeld; its message gives
// both), elects that node while that hold lasts. It is not consulted
// otherwise: a choice left over from an earlier hold elects nothing.
const ElectAnnotation = "app.redislabs.com/elect-primary"
