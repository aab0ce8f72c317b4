package backuprun

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Report is what every backup tool reports when it ends, as one JSON
// object in its container's termination message: the backup it stored or
// restored, or why it failed. Each tool's result embeds it, so that the
// object stays flat.
type Report struct {
	// Key is where the backup is: its S3 key or its path.
	Key string `json:"key,omitempty"`
	// Size is the backup's size in bytes.
	Size int64 `json:"size,omitempty"`
	// TakenAt is when the snapshot was taken (for Redis, when the dataset
	// was read).
	TakenAt time.Time `json:"takenAt,omitzero"`
	// AlreadyRestored, for a restore, says that the data directory held a
	// member (etcd) or data (Redis) already: nothing was done.
	AlreadyRestored bool `json:"alreadyRestored,omitempty"`
	// Skipped, for a restore, says that it ran in a pod other than the
	// one it restores: nothing was done.
	Skipped bool `json:"skipped,omitempty"`

	// Reason, on a failure, is a word for why (AccessDenied,
	// BucketNotFound, CredentialsMissing, Unreachable, TargetFull,
	// NotFound, Corrupt, InvalidArgument, Timeout, Failed; NoLeader from
	// etcd, NoNodeInSync from Redis).
	Reason string `json:"reason,omitempty"`
	// Error, on a failure, says why in a sentence.
	Error string `json:"error,omitempty"`
}

// Failed reports whether r is a failure.
func (r Report) Failed() bool { return r.Error != "" || r.Reason != "" }

// Cause is, on a failure, the reason and the sentence that says why.
func (r Report) Cause() (reason, why string) { return r.Reason, r.Error }

// EtcdResult is what the etcd snapshot tool reports: the snapshot it
// stored or restored, or why it failed.
type EtcdResult struct {
	Report
	// Revision is the revision of etcd's key space in the snapshot.
	Revision int64 `json:"revision,omitempty"`
	// EtcdVersion is the version of the member the snapshot came from.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Member is the member the snapshot came from.
	Member string `json:"member,omitempty"`
}

// RedisResult is what the Redis snapshot tool reports: the backup it
// stored or restored, or why it failed.
type RedisResult struct {
	Report
	// Node is the pod of the node the dataset was read from.
	Node string `json:"node,omitempty"`
	// Role is that node's role when it was read: replica or primary.
	Role string `json:"role,omitempty"`
	// Offset is the replication offset the dataset holds every write up
	// to (the RDB's repl-offset).
	Offset int64 `json:"offset,omitempty"`
	// ReplicationID is the replication ID the offset belongs to.
	ReplicationID string `json:"replicationID,omitempty"`
	// RedisVersion is the version of the node the dataset came from.
	RedisVersion string `json:"redisVersion,omitempty"`
	// Keys is how many keys the dataset holds, when the tool counted them.
	Keys int64 `json:"keys,omitempty"`
}

// Parse reads a tool's termination message as an R; tool names the tool
// in the error when the message is empty.
func Parse[R any](message, tool string) (R, error) {
	var r R
	message = strings.TrimSpace(message)
	if message == "" {
		return r, errors.New(tool + " said nothing")
	}
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		var zero R
		return zero, err
	}
	return r, nil
}

// ParseEtcd reads the etcd snapshot tool's termination message.
func ParseEtcd(message string) (EtcdResult, error) {
	return Parse[EtcdResult](message, "the snapshot tool")
}

// ParseRedis reads the Redis snapshot tool's termination message.
func ParseRedis(message string) (RedisResult, error) {
	return Parse[RedisResult](message, "the Redis snapshot tool")
}
