package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/backuprun"
)

// RedisBackupFailureReason is status.backupInfo.backupFailureReason of
// the failed run r: its reason, then why.
func RedisBackupFailureReason(r backuprun.RedisRun) string {
	f := backuprun.Failure(r)
	return f.Reason + ": " + f.Message
}

// RedisBackupInfo returns status.backupInfo from spec.backup, the runs
// (newest first) and the status before: without spec.backup, only the
// backup request last handled (nil when none was). What the last
// successful backup stored stays after its Job is pruned.
func RedisBackupInfo(before *redisv1alpha1.BackupInfo, backup *redisv1alpha1.Backup, runs []backuprun.RedisRun) *redisv1alpha1.BackupInfo {
	if backup == nil {
		if before == nil || before.LastRequest == "" {
			return nil
		}
		return &redisv1alpha1.BackupInfo{LastRequest: before.LastRequest}
	}
	info := &redisv1alpha1.BackupInfo{}
	if before != nil {
		info = before.DeepCopy()
	}
	info.BackupInterval = int32(backup.Every().Seconds())
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
