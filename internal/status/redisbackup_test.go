package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/backuprun"
)

func TestRedisBackupInfo(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(min int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(min) * time.Minute)) }
	stored := func(job string, min int, key string, offset int64) backuprun.RedisRun {
		return backuprun.RedisRun{Job: job, Started: at(min), Done: true, Succeeded: true,
			Result: &backuprun.RedisResult{Report: backuprun.Report{Key: key, TakenAt: at(min).Time}, Offset: offset}}
	}
	failed := backuprun.RedisRun{Job: "j3", Started: at(20), Done: true, Result: &backuprun.RedisResult{Report: backuprun.Report{Reason: "TargetFull", Error: "no space left"}}}
	running := backuprun.RedisRun{Job: "j4", Started: at(30)}
	backup := &redisv1alpha1.Backup{Interval: 600}
	tests := []struct {
		name       string
		backup     *redisv1alpha1.Backup
		runs       []backuprun.RedisRun
		wantStatus string
		wantReason string
		wantLast   string
		wantOffset int64
	}{
		{"no backup asked", nil, nil, "", "", "", 0},
		{"none run yet", backup, nil, redisv1alpha1.BackupStatusScheduled, "", "", 0},
		{"one stored", backup, []backuprun.RedisRun{stored("j1", 0, "k1", 10)}, redisv1alpha1.BackupStatusSucceeded, "", "k1", 10},
		{"the newest stored wins", backup, []backuprun.RedisRun{stored("j2", 10, "k2", 20), stored("j1", 0, "k1", 10)}, redisv1alpha1.BackupStatusSucceeded, "", "k2", 20},
		{"a failure keeps the last stored", backup, []backuprun.RedisRun{failed, stored("j2", 10, "k2", 20)},
			redisv1alpha1.BackupStatusFailed, "TargetFull: Backup Job j3 failed: no space left", "k2", 20},
		{"a retry runs after a failure: the reason stays", backup, []backuprun.RedisRun{running, failed, stored("j2", 10, "k2", 20)},
			redisv1alpha1.BackupStatusRunning, "TargetFull: Backup Job j3 failed: no space left", "k2", 20},
		{"a Job that failed without a word", backup, []backuprun.RedisRun{{Job: "j5", Started: at(40), Done: true, Message: "Job j5 failed: DeadlineExceeded: too long"}},
			redisv1alpha1.BackupStatusFailed, "BackupFailed: Job j5 failed: DeadlineExceeded: too long", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := RedisBackupInfo(nil, tt.backup, tt.runs)
			if tt.backup == nil {
				if info != nil {
					t.Fatalf("backupInfo %+v without spec.backup, want none", info)
				}
				return
			}
			if info.BackupStatus != tt.wantStatus || info.BackupFailureReason != tt.wantReason || info.LastBackup != tt.wantLast ||
				info.ReplicationOffset != tt.wantOffset || info.BackupInterval != 600 {
				t.Errorf("backupInfo %+v, want status %s, reason %q, last %q at offset %d", info, tt.wantStatus, tt.wantReason, tt.wantLast, tt.wantOffset)
			}
		})
	}
	// What was stored stays once its Job is pruned.
	before := RedisBackupInfo(nil, backup, []backuprun.RedisRun{stored("j1", 0, "k1", 10)})
	if info := RedisBackupInfo(before, backup, []backuprun.RedisRun{failed}); info.LastBackup != "k1" || info.LastBackupTime == nil {
		t.Errorf("backupInfo %+v after the Job of the last stored backup was pruned, want k1 kept", info)
	}
	// The backup request last handled stays, with spec.backup or without
	// (refused then), so that it is not handled again.
	before.LastRequest = "b1"
	if info := RedisBackupInfo(before, backup, nil); info.LastRequest != "b1" {
		t.Errorf("backupInfo %+v, want the request b1 kept", info)
	}
	if info := RedisBackupInfo(before, nil, nil); info == nil || *info != (redisv1alpha1.BackupInfo{LastRequest: "b1"}) {
		t.Errorf("backupInfo %+v without spec.backup, want only the request b1", info)
	}
}
