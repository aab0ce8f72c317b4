// Package redisbackup builds what backs up and restores the dataset of a
// RedisEnterpriseCluster: the Jobs that run the Redis snapshot tool, its
// arguments for a backup location, and the result it reports. Like every
// builder, it is pure.
package redisbackup

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

const (
	// Tool is the Redis snapshot tool's path in the operator's image.
	Tool = "/redis-snapshot"
	// ContainerName is the name of the container that runs the tool, in a
	// backup Job and as the restoring init container of a node.
	ContainerName = "snapshot"
	// ExitPermanent is the tool's exit code for a failure that trying
	// again cannot mend (access denied, no such bucket): the Job fails at
	// once rather than retry.
	ExitPermanent = 2
	// PasswordEnv and UsernameEnv name the environment variables the tool
	// reads the credentials of the Redis nodes from.
	PasswordEnv = "REDIS_PASSWORD"
	UsernameEnv = "REDIS_USERNAME"
	// PodNameEnv is the environment variable with the pod's name, which a
	// restore compares with --only-pod.
	PodNameEnv = "POD_NAME"
)

// Result is what the Redis snapshot tool reports when it ends, as one
// JSON object in its container's termination message: the backup it
// stored or restored, or why it failed.
type Result struct {
	// Key is where the backup is: its S3 key or its path.
	Key string `json:"key,omitempty"`
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
	// Size is the backup's size in bytes.
	Size int64 `json:"size,omitempty"`
	// TakenAt is when the dataset was read.
	TakenAt time.Time `json:"takenAt,omitzero"`
	// AlreadyRestored, for a restore, says that the data directory held
	// data already: nothing was done.
	AlreadyRestored bool `json:"alreadyRestored,omitempty"`
	// Skipped, for a restore, says that it ran in a pod other than the
	// one it restores: nothing was done.
	Skipped bool `json:"skipped,omitempty"`

	// Reason, on a failure, is a word for why (AccessDenied,
	// BucketNotFound, CredentialsMissing, NoNodeInSync, Unreachable,
	// TargetFull, NotFound, Corrupt, InvalidArgument, Timeout, Failed).
	Reason string `json:"reason,omitempty"`
	// Error, on a failure, says why in a sentence.
	Error string `json:"error,omitempty"`
}

// Failed reports whether r is a failure.
func (r Result) Failed() bool { return r.Error != "" || r.Reason != "" }

// Cause is, on a failure, the reason and the sentence that says why.
func (r Result) Cause() (reason, why string) { return r.Reason, r.Error }

// ParseResult reads the tool's termination message.
func ParseResult(message string) (Result, error) {
	message = strings.TrimSpace(message)
	if message == "" {
		return Result{}, errors.New("the Redis snapshot tool said nothing")
	}
	var r Result
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		return Result{}, err
	}
	return r, nil
}
