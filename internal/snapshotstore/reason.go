package snapshotstore

import (
	"context"
	"errors"
	"fmt"
)

// Reason is a short, machine-readable cause of a failed save or restore,
// which the controller copies into the resource's status.
type Reason string

// The reasons a save or a restore fails with, whatever it backs up. A tool
// may add its own.
const (
	// ReasonBucketNotFound: the S3 bucket of the target does not exist.
	ReasonBucketNotFound Reason = "BucketNotFound"
	// ReasonAccessDenied: the credentials were refused, or a file could not be written or read for lack of permission.
	ReasonAccessDenied Reason = "AccessDenied"
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
	// missing, or has no credentials.
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

// Failure wraps err with a reason, keeping a reason err already has.
func Failure(reason Reason, format string, args ...any) error {
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

// ExitPermanent is the exit code of a failure that trying again cannot
// help: the Job that runs the tool then fails at once.
const ExitPermanent = 2

// ExitCode is the exit code of a failure for reason: ExitPermanent for
// the permanent ones, 1 otherwise.
func ExitCode(reason Reason) int {
	switch reason {
	case ReasonAccessDenied, ReasonBucketNotFound, ReasonInvalidArgument, ReasonCorrupt, ReasonNotFound, ReasonCredentialsMissing:
		return ExitPermanent
	}
	return 1
}

// TimedOut gives err the reason Timeout when ctx ended: the run did not
// finish within its time limit while doing what.
func TimedOut(ctx context.Context, err error, what string) error {
	if err != nil && ctx.Err() != nil {
		return &Error{Reason: ReasonTimeout, Err: fmt.Errorf("the %s did not finish within its timeout: %w", what, err)}
	}
	return err
}
