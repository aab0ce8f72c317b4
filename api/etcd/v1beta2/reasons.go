package v1beta2

// The condition reasons of an EtcdCluster, which its planner gives.
const (
	ReasonScaling            = "Scaling"
	ReasonUpgrading          = "Upgrading"
	ReasonReplacing          = "Replacing"
	ReasonMemberUnhealthy    = "MemberUnhealthy"
	ReasonQuorumLost         = "QuorumLost"
	ReasonScaleInRefused     = "ScaleInRefused"
	ReasonVersionSkew        = "VersionSkew"
	ReasonVersionUnavailable = "VersionUnavailable"
	// ReasonVersionUnsupported: spec.version is below MinimumVersion; the
	// operator creates nothing for it.
	ReasonVersionUnsupported = "VersionUnsupported"
	// ReasonNoSpace: etcd raised its NOSPACE alarm (a member's backend
	// reached its quota): the cluster refuses writes until it is disarmed.
	ReasonNoSpace = "NoSpace"
	// ReasonCorrupt: etcd raised its CORRUPT alarm (its corruption check
	// found data that differs between members): the cluster refuses writes
	// until it is disarmed.
	ReasonCorrupt = "Corrupt"
	// ReasonAlarm: etcd raised an alarm the operator does not know (neither
	// NOSPACE nor CORRUPT): the cluster may refuse writes until it is
	// disarmed.
	ReasonAlarm = "Alarm"
	// ReasonMembersUnreachable: members the operator cannot reach serve
	// (their pods pass the readiness probe on /health): the operator is
	// cut off from them; the cluster may be fine.
	ReasonMembersUnreachable = "MembersUnreachable"
	// ReasonEnablingTLS: a running cluster moves to the TLS spec.TLS set
	// (see the planner's Stage).
	ReasonEnablingTLS = "EnablingTLS"
	// ReasonRotatingCA: the CAs in the Secrets of spec.TLS changed, and
	// the members restart to load them.
	ReasonRotatingCA = "RotatingCA"
	// ReasonCAReplaced: the CAs in the Secrets of spec.TLS share no signer
	// with those members started with, and the members still reach one
	// another: a member restarted on them could not, so none is restarted
	// until they show they cannot.
	ReasonCAReplaced = "CAReplaced"
)

// The condition reasons of an EtcdBackup, beyond the reasons the snapshot
// tool gives a failed backup (AccessDenied, BucketNotFound, ...) and
// conditions.ReasonBackupFailed.
const (
	// ReasonClusterNotFound: spec.clusterName names no EtcdCluster.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonBackupRunning: a backup's Job runs.
	ReasonBackupRunning = "BackupRunning"
	// ReasonWaitingForCluster: the backup waits for its cluster to have
	// members.
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonBackupPending: no backup has started yet.
	ReasonBackupPending = "BackupPending"
)

// The condition reasons of an EtcdRestore.
const (
	// ReasonClusterExists: the EtcdCluster the restore names exists and
	// the restore did not create it.
	ReasonClusterExists = "ClusterExists"
	// ReasonRestoring: the restored cluster is coming up.
	ReasonRestoring = "Restoring"
)
