package etcdbackup

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Result is what the snapshot tool reports when it ends, as one JSON
// object in its container's termination message: the snapshot it stored
// or restored, or why it failed.
type Result struct {
	// Key is where the snapshot is: its S3 key or its path.
	Key string `json:"key,omitempty"`
	// Revision is the revision of etcd's key space in the snapshot.
	Revision int64 `json:"revision,omitempty"`
	// EtcdVersion is the version of the member the snapshot came from.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// Size is the snapshot's size in bytes.
	Size int64 `json:"size,omitempty"`
	// TakenAt is when the snapshot was taken.
	TakenAt time.Time `json:"takenAt,omitzero"`
	// Member is the member the snapshot came from.
	Member string `json:"member,omitempty"`
	// AlreadyRestored, for a restore, says that the data directory held a
	// member already: nothing was done.
	AlreadyRestored bool `json:"alreadyRestored,omitempty"`
	// Skipped, for a restore, says that it ran in a pod other than the
	// one it restores: nothing was done.
	Skipped bool `json:"skipped,omitempty"`

	// Reason, on a failure, is a word for why (AccessDenied,
	// BucketNotFound, NoLeader, TargetFull, Unreachable, Failed).
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
		return Result{}, errors.New("the snapshot tool said nothing")
	}
	var r Result
	if err := json.Unmarshal([]byte(message), &r); err != nil {
		return Result{}, err
	}
	return r, nil
}
