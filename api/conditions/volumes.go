package conditions

// The condition of a data service (EtcdCluster, RedisEnterpriseCluster)
// whose claims are growing to a larger size, and its reasons. It is set
// only once a claim has had to grow.
const (
	// VolumeExpansion is True while a claim is being grown, False once
	// every claim is at the size (Expanded) or when none can be
	// (NotExpandable).
	VolumeExpansion = "VolumeExpansion"
	// ReasonExpanding: one claim is being grown; the message names it.
	ReasonExpanding = "Expanding"
	// ReasonExpanded: every claim is at the size the spec asks for.
	ReasonExpanded = "Expanded"
	// ReasonNotExpandable: a claim must grow but its StorageClass does
	// not allow volume expansion; the message names the class, and no
	// claim is changed.
	ReasonNotExpandable = "NotExpandable"
)
