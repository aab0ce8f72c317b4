// Package etcdsnapshot is the data path of etcd backups and restores: it
// takes a snapshot from the best member of an etcd cluster and stores it in
// an S3 bucket or a local directory (a mounted PersistentVolumeClaim), and it
// restores a member's data dir from such a snapshot. The etcd-snapshot binary
// runs it in the backup Job's pod and in the restore init container; the
// manager never links it.
package etcdsnapshot

import (
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// Reason is a short, machine-readable cause of a failed save or restore,
// which the controller copies into the resource's status.
type Reason = snapshotstore.Reason

// The reasons a save or a restore fails with: those of every backup tool,
// NoLeader and TimelinesInterleaved.
const (
	ReasonBucketNotFound = conditions.ReasonBucketNotFound
	ReasonAccessDenied   = conditions.ReasonAccessDenied
	ReasonUnreachable    = conditions.ReasonUnreachable
	ReasonTargetFull     = conditions.ReasonTargetFull
	ReasonNotFound       = conditions.ReasonNotFound
	ReasonCorrupt        = conditions.ReasonCorrupt
	// ReasonTimelinesInterleaved: the backups under a prefix come from
	// clusters that wrote to it at the same time (see chooseBackup).
	ReasonTimelinesInterleaved = conditions.ReasonTimelinesInterleaved
	ReasonInvalidArgument      = conditions.ReasonInvalidArgument
	ReasonCredentialsMissing   = conditions.ReasonCredentialsMissing
	ReasonTimeout              = conditions.ReasonTimeout
	ReasonFailed               = conditions.ReasonFailed
	// ReasonNoLeader: members answered, but none had a leader.
	ReasonNoLeader Reason = "NoLeader"
)

// Error is a failure with its Reason.
type Error = snapshotstore.Error

// S3Options says how to reach S3.
type S3Options = snapshotstore.S3Options

// failure wraps err with a reason, keeping a reason err already has.
var failure = snapshotstore.Failure

// ReasonOf returns the reason of err: that of the Error it wraps, Timeout for
// an expired deadline, or Failed.
func ReasonOf(err error) Reason { return snapshotstore.ReasonOf(err) }

// Result is what a save or restore reports, as the controllers read it
// from the termination message: the snapshot, or on a failure Error and
// Reason.
type Result = backuprun.EtcdResult
