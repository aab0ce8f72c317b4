package redisbackup

import (
	"encoding/json"
	"strings"
)

// AuthContainerName is the init container of every node that writes its
// password to AuthFile, which Redis includes.
const (
	AuthContainerName = "auth"
	AuthFile          = "auth.conf"
)

// LineageContainerName is the init container of every node that reports,
// before Redis starts, how far the node's data got (Lineage).
const LineageContainerName = "lineage"

// Lineage is what the Redis snapshot tool reports of a node's data folder
// before Redis starts, as its termination message: the replication ID and
// offset of the last RDB Redis wrote, when that RDB holds every write of
// the append-only file (Redis writes it on SIGTERM, after the last write;
// an append-only file reloaded at start restores neither).
type Lineage struct {
	// Known is whether ReplicationID and Offset say how far the data got.
	Known bool `json:"known"`
	// Empty is whether the folder held no data.
	Empty bool `json:"empty,omitempty"`
	// ReplicationID and Offset are the history the data belongs to and
	// how far along it.
	ReplicationID string `json:"replicationID,omitempty"`
	Offset        int64  `json:"offset,omitempty"`
	// Why says, when not Known, why not.
	Why string `json:"why,omitempty"`
}

// ParseLineage reads the lineage container's termination message.
func ParseLineage(message string) (Lineage, error) {
	var l Lineage
	if err := json.Unmarshal([]byte(strings.TrimSpace(message)), &l); err != nil {
		return Lineage{}, err
	}
	return l, nil
}
