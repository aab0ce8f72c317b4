package etcdcluster

import (
	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Space is what bounds a member's database, in its start-up file: etcd
// compacts its own history and refuses writes past a quota, so that a
// client that never compacts cannot fill the member's claim.
type Space struct {
	// AutoCompactionMode is always periodic: history older than
	// AutoCompactionRetention is compacted.
	AutoCompactionMode      string `json:"auto-compaction-mode,omitempty"`
	AutoCompactionRetention string `json:"auto-compaction-retention,omitempty"`
	// QuotaBackendBytes is the size past which etcd raises NOSPACE.
	QuotaBackendBytes int64 `json:"quota-backend-bytes,omitempty"`
}

// LogAllowance is the part of a member's claim kept for its write-ahead
// log and snapshots (etcd keeps five of each, the log's files 64 MiB).
var LogAllowance = resource.MustParse("512Mi")

// DefaultBackendQuota is the quota of a cluster whose spec.maintenance
// sets none: half of what its claim (spec.storage.size) holds beside the
// log, since a defragmentation writes a copy of the database next to it;
// between etcdv1beta2.MinBackendQuota and etcdv1beta2.MaxBackendQuota.
func DefaultBackendQuota(spec *etcdv1beta2.EtcdClusterSpec) int64 {
	size := spec.StorageSize()
	q := (size.Value() - LogAllowance.Value()) / 2
	return min(max(q, etcdv1beta2.MinBackendQuota.Value()), etcdv1beta2.MaxBackendQuota.Value())
}

// BackendQuota is the quota the members of spec start with.
func BackendQuota(spec *etcdv1beta2.EtcdClusterSpec) int64 {
	if q := spec.Upkeep().BackendQuota; q > 0 {
		return q
	}
	return DefaultBackendQuota(spec)
}

// SpaceOf is the Space of spec's start-up files.
func SpaceOf(spec *etcdv1beta2.EtcdClusterSpec) Space {
	return Space{
		AutoCompactionMode:      "periodic",
		AutoCompactionRetention: spec.Upkeep().CompactionRetention.String(),
		QuotaBackendBytes:       BackendQuota(spec),
	}
}
