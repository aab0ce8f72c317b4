package v1alpha1

// The reasons of the events of a RedisEnterpriseCluster's steps.
const (
	EventPrimaryElected    = "PrimaryElected"
	EventFailedOver        = "FailedOver"
	EventPrimaryHandedOver = "PrimaryHandedOver"
	// EventRestored: a cluster of spec.restore elected its first primary,
	// the node that restored the backup.
	EventRestored = "Restored"
)
