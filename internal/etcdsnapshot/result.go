// Package etcdsnapshot is the data path of etcd backups and restores: it
// takes a snapshot from the best member of an etcd cluster and stores it in
// an S3 bucket or a local directory (a mounted PersistentVolumeClaim), and it
// restores a member's data dir from such a snapshot. The etcd-snapshot binary
// runs it in the backup Job's pod and in the restore init container; the
// manager never links it.
package etcdsnapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
)

// Reason is a short, machine-readable cause of a failed save or restore,
// which the controller copies into the resource's status.
type Reason string

// The reasons a save or a restore fails with.
const (
	// ReasonBucketNotFound: the S3 bucket of the target does not exist.
	ReasonBucketNotFound Reason = "BucketNotFound"
	// ReasonAccessDenied: the credentials were refused, or a file could not be written or read for lack of permission.
	ReasonAccessDenied Reason = "AccessDenied"
	// ReasonNoLeader: members answered, but none had a leader.
	ReasonNoLeader Reason = "NoLeader"
	// ReasonUnreachable: no member (or storage endpoint) answered.
	ReasonUnreachable Reason = "Unreachable"
	// ReasonTargetFull: the target ran out of space.
	ReasonTargetFull Reason = "TargetFull"
	// ReasonNotFound: no backup exists under the given name or prefix.
	ReasonNotFound Reason = "NotFound"
	// ReasonCorrupt: the snapshot failed its integrity check.
	ReasonCorrupt Reason = "Corrupt"
	// ReasonInvalidArgument: a flag is missing or malformed.
	ReasonInvalidArgument Reason = "InvalidArgument"
	// ReasonCredentialsMissing: the Secret of the S3 credentials is
	// missing, or has no credentials file.
	ReasonCredentialsMissing Reason = "CredentialsMissing"
	// ReasonTimeout: the run did not finish within its timeout.
	ReasonTimeout Reason = "Timeout"
	// ReasonFailed: any other failure.
	ReasonFailed Reason = "Failed"
)

// Error is a failure with its Reason. Its message is one sentence that says
// what went wrong.
type Error struct {
	Reason Reason
	Err    error
}

// Error returns the message.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// failure wraps err with a reason, keeping a reason err already has.
func failure(reason Reason, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Reason: reason, Err: err}
}

// ReasonOf returns the reason of err: that of the Error it wraps, Timeout for
// an expired deadline, or Failed.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ReasonTimeout
	}
	return ReasonFailed
}

// Result is what a save or restore reports, as the controllers read it
// from the termination message: the snapshot, or on a failure Error and
// Reason.
type Result = etcdbackup.Result

// writeResultFile writes v as JSON to path, ignoring a path that cannot be
// written (such as /dev/termination-log outside a pod).
func writeResultFile(path string, v any) {
	if path == "" {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_ = os.WriteFile(path, append(b, '\n'), 0o644)
}
