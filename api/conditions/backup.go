package conditions

// The reasons a backup or a restore fails with, as the snapshot tools
// report them and the backups' status and conditions carry them.
const (
	// ReasonBackupFailed: the last backup failed and its tool said nothing
	// (its pod never started, or the Job ran out of time).
	ReasonBackupFailed = "BackupFailed"

	// ReasonBucketNotFound: the S3 bucket of the target does not exist.
	ReasonBucketNotFound = "BucketNotFound"
	// ReasonAccessDenied: the credentials were refused, or a file could not be written or read for lack of permission.
	ReasonAccessDenied = "AccessDenied"
	// ReasonUnreachable: no member (or storage endpoint) answered.
	ReasonUnreachable = "Unreachable"
	// ReasonTargetFull: the target ran out of space.
	ReasonTargetFull = "TargetFull"
	// ReasonNotFound: no backup exists under the given name or prefix.
	ReasonNotFound = "NotFound"
	// ReasonCorrupt: the snapshot failed its integrity check.
	ReasonCorrupt = "Corrupt"
	// ReasonTimelinesInterleaved: the backups under a prefix come from
	// clusters that wrote to it at the same time, so the newest cannot be
	// told.
	ReasonTimelinesInterleaved = "TimelinesInterleaved"
	// ReasonInvalidArgument: a flag is missing or malformed.
	ReasonInvalidArgument = "InvalidArgument"
	// ReasonCredentialsMissing: the Secret of the S3 credentials is
	// missing, or has no credentials.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonTimeout: the run did not finish within its timeout.
	ReasonTimeout = "Timeout"
	// ReasonFailed: any other failure.
	ReasonFailed = "Failed"
	// ReasonNoNodeInSync: nodes answered, but none was the primary or a
	// replica in sync with it.
	ReasonNoNodeInSync = "NoNodeInSync"
)

// ReasonTLSSecretInvalid: a Secret a data service's TLS names is missing,
// lacks a key or holds no usable certificate; nothing is applied until it
// is fixed.
const ReasonTLSSecretInvalid = "TLSSecretInvalid"
