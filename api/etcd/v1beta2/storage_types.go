package v1beta2

import "k8s.io/apimachinery/pkg/api/resource"

// DefaultStorageSize is the size of each member's claim when
// spec.storage.size is left out: etcd's default backend quota (2 GiB) and
// room for its write-ahead log and snapshots.
const DefaultStorageSize = "4Gi"

// Storage is the size and StorageClass of each member's claim. A larger
// size grows every claim in place, one at a time, where the StorageClass
// allows volume expansion; a smaller one is refused.
type Storage struct {
	// Size is the size each member's claim asks for (4Gi when left out).
	// It may grow, never shrink.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.storage.size must be positive"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the StorageClass of the members' claims; the
	// cluster's default class when left out. It cannot change.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// StorageSize is the size each member's claim asks for.
func (s *EtcdClusterSpec) StorageSize() resource.Quantity {
	if s.Storage != nil && s.Storage.Size != nil {
		return *s.Storage.Size
	}
	return resource.MustParse(DefaultStorageSize)
}

// StorageClassName is the StorageClass spec.storage names, empty for the
// cluster's default.
func (s *EtcdClusterSpec) StorageClassName() string {
	if s.Storage == nil {
		return ""
	}
	return s.Storage.StorageClassName
}
