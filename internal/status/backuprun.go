package status

import (
	"cmp"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// BackupResult is what a backup tool reports when it ends, as its
// termination message (etcdbackup.Result, redisbackup.Result).
type BackupResult interface {
	// Failed reports whether the tool failed.
	Failed() bool
	// Cause is, on a failure, the tool's reason and its words.
	Cause() (reason, why string)
}

// ReasonBackupFailed: the last backup failed and its tool said nothing
// (its pod never started, or the Job ran out of time).
const ReasonBackupFailed = "BackupFailed"

// Run is one backup: its Job, and what the tool said once it ended.
type Run[R BackupResult] struct {
	// Job is the Job's name.
	Job string
	// Generation is the generation of the resource the Job was made for,
	// where the kind records it (an EtcdBackup's); 0 otherwise.
	Generation int64
	// Started is when the Job started.
	Started metav1.Time
	// Done is whether the Job ended; Succeeded whether it completed.
	Done, Succeeded bool
	// Result is what the tool said when it ended; nil when it said
	// nothing (its pod did not start, say).
	Result *R
	// Message is why the Job failed, from its condition.
	Message string
}

// BackupRun is a backup of an EtcdBackup; RedisBackupRun one of a
// RedisEnterpriseCluster.
type (
	BackupRun      = Run[etcdbackup.Result]
	RedisBackupRun = Run[redisbackup.Result]
)

// BackupFailure is why the failed run r failed: the tool's reason and
// words where it gave them, else the Job's.
func BackupFailure[R BackupResult](r Run[R]) *Failure {
	if r.Result != nil && (*r.Result).Failed() {
		reason, why := (*r.Result).Cause()
		return &Failure{
			Reason:  cmp.Or(reason, ReasonBackupFailed),
			Message: fmt.Sprintf("Backup Job %s failed: %s", r.Job, cmp.Or(why, reason)),
		}
	}
	return &Failure{Reason: ReasonBackupFailed, Message: cmp.Or(r.Message, fmt.Sprintf("Backup Job %s failed", r.Job))}
}
