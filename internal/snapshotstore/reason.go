package snapshotstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/app-operator/app-operator/api/conditions"
)

// Reason is a short, machine-readable cause of a failed save or restore,
// which the controller copies into the resource's status.
type Reason string

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
		return conditions.ReasonTimeout
	}
	return conditions.ReasonFailed
}

// ExitPermanent is the exit code of a failure that trying again cannot
// help: the Job that runs the tool then fails at once.
const ExitPermanent = 2

// ExitCode is the exit code of a failure for reason: ExitPermanent for
// the permanent ones, 1 otherwise.
func ExitCode(reason Reason) int {
	switch reason {
	case conditions.ReasonAccessDenied, conditions.ReasonBucketNotFound, conditions.ReasonInvalidArgument, conditions.ReasonCorrupt, conditions.ReasonNotFound, conditions.ReasonCredentialsMissing,
		conditions.ReasonTimelinesInterleaved:
		return ExitPermanent
	}
	return 1
}

// TimedOut gives err the reason Timeout when ctx ended: the run did not
// finish within its time limit while doing what.
func TimedOut(ctx context.Context, err error, what string) error {
	if err != nil && ctx.Err() != nil {
		return &Error{Reason: conditions.ReasonTimeout, Err: fmt.Errorf("the %s did not finish within its timeout: %w", what, err)}
	}
	return err
}
