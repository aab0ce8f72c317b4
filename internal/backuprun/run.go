// Package backuprun is what a backup tool reports in its termination
// message and what the operator makes of one backup Job: the snapshot
// tools, internal/backup and internal/status share it, so it stays light.
package backuprun

import (
	"cmp"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

// Result is what a backup tool reports when it ends, as its termination
// message (EtcdResult, RedisResult).
type Result interface {
	// Failed reports whether the tool failed.
	Failed() bool
	// Cause is, on a failure, the tool's reason and its words.
	Cause() (reason, why string)
}

// Run is one backup: its Job, and what the tool said once it ended.
type Run[R Result] struct {
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

// EtcdRun is a backup of an EtcdBackup; RedisRun one of a
// RedisEnterpriseCluster.
type (
	EtcdRun  = Run[EtcdResult]
	RedisRun = Run[RedisResult]
)

// Failure is why the failed run r failed: the tool's reason and words
// where it gave them, else the Job's.
func Failure[R Result](r Run[R]) *conditions.Failure {
	if r.Result != nil && (*r.Result).Failed() {
		reason, why := (*r.Result).Cause()
		return &conditions.Failure{
			Reason:  cmp.Or(reason, conditions.ReasonBackupFailed),
			Message: fmt.Sprintf("Backup Job %s failed: %s", r.Job, cmp.Or(why, reason)),
		}
	}
	return &conditions.Failure{Reason: conditions.ReasonBackupFailed, Message: cmp.Or(r.Message, fmt.Sprintf("Backup Job %s failed", r.Job))}
}
