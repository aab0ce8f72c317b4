package status

import (
	"cmp"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// RedisBackupRun is one backup of a RedisEnterpriseCluster: its Job, and
// what the tool said once it ended.
type RedisBackupRun struct {
	// Job is the Job's name.
	Job string
	// Started is when the Job was created.
	Started metav1.Time
	// Done is whether the Job ended; Succeeded whether it completed.
	Done, Succeeded bool
	// Result is what the tool said when it ended; nil when it said
	// nothing (its pod did not start, say).
	Result *redisbackup.Result
	// Message is why the Job failed, from its condition.
	Message string
}

// RedisBackupFailure is why the failed run r failed: the tool's reason
// and words where it gave them, else the Job's.
func RedisBackupFailure(r RedisBackupRun) *Failure {
	if r.Result != nil && r.Result.Failed() {
		return &Failure{
			Reason:  cmp.Or(r.Result.Reason, redisbackup.ReasonBackupFailed),
			Message: fmt.Sprintf("Backup Job %s failed: %s", r.Job, cmp.Or(r.Result.Error, r.Result.Reason)),
		}
	}
	return &Failure{Reason: redisbackup.ReasonBackupFailed, Message: cmp.Or(r.Message, fmt.Sprintf("Backup Job %s failed", r.Job))}
}

// RedisBackupFailureReason is status.backupInfo.backupFailureReason of
// the failed run r: its reason, then why.
func RedisBackupFailureReason(r RedisBackupRun) string {
	f := RedisBackupFailure(r)
	return f.Reason + ": " + f.Message
}

// RedisBackupInfo returns status.backupInfo from spec.backup, the runs
// (newest first) and the status before: nil without spec.backup. What the
// last successful backup stored stays after its Job is pruned.
func RedisBackupInfo(before *redisv1alpha1.BackupInfo, backup *redisv1alpha1.Backup, runs []RedisBackupRun) *redisv1alpha1.BackupInfo {
	if backup == nil {
		return nil
	}
	info := &redisv1alpha1.BackupInfo{}
	if before != nil {
		info = before.DeepCopy()
	}
	info.BackupInterval = int32(redisbackup.Interval(backup).Seconds())
	if len(runs) > 0 {
		t := runs[0].Started
		info.LastScheduleTime = &t
	}
	for _, r := range runs {
		if !r.Succeeded || r.Result == nil || r.Result.Failed() {
			continue
		}
		if info.LastBackupTime == nil || r.Result.TakenAt.After(info.LastBackupTime.Time) {
			taken := metav1.NewTime(r.Result.TakenAt)
			info.LastBackupTime = &taken
			info.LastBackup, info.ReplicationOffset = r.Result.Key, r.Result.Offset
		}
		break
	}
	info.BackupStatus, info.BackupFailureReason = redisv1alpha1.BackupStatusScheduled, ""
	for _, r := range runs {
		switch {
		case !r.Done:
			info.BackupStatus = redisv1alpha1.BackupStatusRunning
			continue
		case r.Succeeded:
			if info.BackupStatus != redisv1alpha1.BackupStatusRunning {
				info.BackupStatus = redisv1alpha1.BackupStatusSucceeded
			}
		default:
			if info.BackupStatus != redisv1alpha1.BackupStatusRunning {
				info.BackupStatus = redisv1alpha1.BackupStatusFailed
			}
			info.BackupFailureReason = RedisBackupFailureReason(r)
		}
		break
	}
	return info
}
