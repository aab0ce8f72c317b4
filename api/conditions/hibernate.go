package conditions

// Reasons of a data service (EtcdCluster, RedisEnterpriseCluster) whose
// spec.hibernate is true: every pod is stopped, every claim and Secret
// kept, and nothing changes the membership or the roles until it wakes.
const (
	// ReasonHibernating: spec.hibernate is true and pods still run: the
	// StatefulSet is at 0 replicas and its pods are stopping (Ready=False,
	// Progressing=True).
	ReasonHibernating = "Hibernating"
	// ReasonHibernated: spec.hibernate is true and no pod runs: the
	// resource is at its spec (Ready=True, Progressing=False), serving
	// nothing, as a Deployment scaled to 0 is available.
	ReasonHibernated = "Hibernated"
	// EventHibernating and EventWaking: spec.hibernate was set, and
	// removed (or set to false).
	EventHibernating = "Hibernating"
	EventWaking      = "Waking"
)
