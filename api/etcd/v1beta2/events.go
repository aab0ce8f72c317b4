package v1beta2

// The reasons of the events of an EtcdCluster's steps, and of an
// EtcdRestore's.
const (
	EventClusterSeeded   = "ClusterSeeded"
	EventLearnerAdded    = "LearnerAdded"
	EventLearnerPromoted = "LearnerPromoted"
	EventMemberRemoved   = "MemberRemoved"
	EventLeaderMoved     = "LeaderMoved"
	EventPeerURLUpdated  = "PeerURLUpdated"
	EventRestoreStarted  = "RestoreStarted"
	// The steps that keep a member's database small, and remedy a
	// NOSPACE alarm.
	EventCompacted     = "Compacted"
	EventDefragmented  = "Defragmented"
	EventAlarmDisarmed = "AlarmDisarmed"
)

// RestoredByAnnotation on an EtcdCluster names the EtcdRestore that
// created it.
const RestoredByAnnotation = "etcd.database.coreos.com/restored-by"
