package conditions

// The reasons of the events more than one kind emits.
const (
	// EventVolumeReplaced: a member's claim, stranded on a node that is
	// gone, was deleted with its pod, for the member to start again on a
	// new volume.
	EventVolumeReplaced = "VolumeReplaced"
	// EventBackupStarted, EventBackupSucceeded, EventBackupFailed: a backup
	// Job started, and how it ended.
	EventBackupStarted   = "BackupStarted"
	EventBackupSucceeded = "BackupSucceeded"
	EventBackupFailed    = "BackupFailed"
)
