package v1beta2

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The defaults of spec.maintenance: what a cluster that sets none runs
// with.
const (
	// DefaultCompactionRetention is how much history etcd keeps: a client
	// that never compacts leaves no more than an hour of old revisions.
	DefaultCompactionRetention = time.Hour
	// DefaultDefragmentationInterval is the shortest time between two
	// defragmentations of one member, outside a NOSPACE alarm.
	DefaultDefragmentationInterval = 6 * time.Hour
	// DefaultFragmentedPercent is the share of a member's database file
	// that must be free pages before it is defragmented.
	DefaultFragmentedPercent = 50
)

var (
	// MinBackendQuota and MaxBackendQuota bound spec.maintenance's
	// backend quota: etcd suggests at most 8Gi. A cluster that sets none
	// gets half of what its claim holds beside the write-ahead log
	// (etcdcluster.DefaultBackendQuota), within them: 1792Mi for the
	// default claim of 4Gi.
	MinBackendQuota = resource.MustParse("16Mi")
	MaxBackendQuota = resource.MustParse("8Gi")
	// DefaultDefragmentationMinSize is the database size below which a
	// member is not defragmented on schedule: the space it would give
	// back is not worth a member that serves nothing meanwhile.
	DefaultDefragmentationMinSize = resource.MustParse("64Mi")
)

// MaintenancePolicy keeps each member's database small, so that a client
// that never compacts does not fill it: etcd compacts old history itself,
// its database is bounded by a quota, and the operator defragments one
// member at a time when enough of its file is free pages. Whatever it
// says, a NOSPACE alarm is remedied: the operator compacts, defragments
// every member and disarms the alarm.
type MaintenancePolicy struct {
	// CompactionRetention is how much history etcd keeps: it compacts the
	// revisions older than this, about every tenth of it
	// (--auto-compaction-mode=periodic). 1h when left out.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="spec.maintenance.compactionRetention must be between 1m and 720h"
	CompactionRetention *metav1.Duration `json:"compactionRetention,omitempty"`

	// BackendQuota is the size a member's database may reach
	// (--quota-backend-bytes): beyond it, etcd raises its NOSPACE alarm
	// and refuses writes until the operator has freed the space. When
	// left out, half of what the member's claim (spec.storage.size) holds
	// beside 512Mi for its write-ahead log, since a defragmentation writes
	// a copy of the database beside it: 1792Mi for the default 4Gi. At
	// most that for the claim's size, between 16Mi and 8Gi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('16Mi')) >= 0 && quantity(string(self)).compareTo(quantity('8Gi')) <= 0",message="spec.maintenance.backendQuota must be between 16Mi and 8Gi"
	BackendQuota *resource.Quantity `json:"backendQuota,omitempty"`

	// Defragmentation is when the operator defragments a member, outside
	// a NOSPACE alarm.
	// +optional
	Defragmentation *DefragmentationPolicy `json:"defragmentation,omitempty"`
}

// DefragmentationPolicy is when a member is defragmented: every member
// healthy, at most once per interval, and only when enough of its
// database file is free pages. Followers go first, the leader last, one
// at a time.
type DefragmentationPolicy struct {
	// MinInterval is the shortest time between two defragmentations of
	// one member. 6h when left out.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="spec.maintenance.defragmentation.minInterval must be between 1m and 8760h"
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`

	// FragmentedPercent is the share of the database file, in percent,
	// that must be free pages ((dbSize - dbSizeInUse) / dbSize) for a
	// member to be defragmented. 50 when left out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	FragmentedPercent *int32 `json:"fragmentedPercent,omitempty"`

	// MinSize is the database size below which a member is not
	// defragmented. 64Mi when left out.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('0')) >= 0",message="spec.maintenance.defragmentation.minSize must not be negative"
	MinSize *resource.Quantity `json:"minSize,omitempty"`
}

// Upkeep is spec.maintenance with its defaults filled in.
type Upkeep struct {
	CompactionRetention time.Duration
	// BackendQuota is 0 when spec.maintenance sets none: the builder
	// sizes it from the claim.
	BackendQuota      int64
	DefragInterval    time.Duration
	FragmentedPercent int32
	DefragMinSize     int64
}

// Upkeep returns spec.maintenance, its defaults where it sets nothing.
func (s *EtcdClusterSpec) Upkeep() Upkeep {
	u := Upkeep{
		CompactionRetention: DefaultCompactionRetention,
		DefragInterval:      DefaultDefragmentationInterval,
		FragmentedPercent:   DefaultFragmentedPercent,
		DefragMinSize:       DefaultDefragmentationMinSize.Value(),
	}
	m := s.Maintenance
	if m == nil {
		return u
	}
	if m.CompactionRetention != nil && m.CompactionRetention.Duration > 0 {
		u.CompactionRetention = m.CompactionRetention.Duration
	}
	if m.BackendQuota != nil && m.BackendQuota.Value() > 0 {
		u.BackendQuota = m.BackendQuota.Value()
	}
	if d := m.Defragmentation; d != nil {
		if d.MinInterval != nil && d.MinInterval.Duration > 0 {
			u.DefragInterval = d.MinInterval.Duration
		}
		if d.FragmentedPercent != nil && *d.FragmentedPercent > 0 {
			u.FragmentedPercent = *d.FragmentedPercent
		}
		if d.MinSize != nil && d.MinSize.Value() >= 0 {
			u.DefragMinSize = d.MinSize.Value()
		}
	}
	return u
}

// NoSpaceRemedy is how far the operator got in freeing the space of a
// cluster that raised its NOSPACE alarm: the compaction it made, after
// which each member is defragmented (see EtcdMember.DefragmentedAt) and
// the alarm disarmed.
type NoSpaceRemedy struct {
	// CompactedAt is when the operator compacted the key space.
	CompactedAt metav1.Time `json:"compactedAt"`
	// CompactedRevision is the revision it compacted to.
	// +optional
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
}
