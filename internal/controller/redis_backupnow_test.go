package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/tools/events"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// askForBackup sets the backup request annotation of the fixture's
// cluster to id.
func askForBackup(t *testing.T, f *redisFixture, id string) {
	t.Helper()
	get(t, f.obj)
	if f.obj.Annotations == nil {
		f.obj.Annotations = map[string]string{}
	}
	f.obj.Annotations[redisv1alpha1.BackupNowAnnotation] = id
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
}

// lastRequest is status.backupInfo.lastRequest of the fixture's cluster.
func (f *redisFixture) lastRequest() string {
	if f.obj.Status.BackupInfo == nil {
		return ""
	}
	return f.obj.Status.BackupInfo.LastRequest
}

// A backup request starts a backup Job at once, beside the schedule, and
// only once: the handled value is recorded with the Job's start, and the
// same value left in place starts none. A new value asked for while a
// backup runs waits until it ends.
func TestRedisBackupNowStartsOneJobPerRequest(t *testing.T) {
	f, _, _ := redisBackupFixture(t, redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{
		PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}})
	f.mustPass()
	f.mustPass()
	// The schedule's first backup, ended.
	jobs := redisBackupJobs(t, f.obj.Namespace)
	if len(jobs) != 1 {
		t.Fatalf("%d backup jobs on a Running cluster, want the schedule's 1", len(jobs))
	}
	endBackupJob(t, &jobs[0], backuprun.RedisResult{Report: backuprun.Report{Key: "k1", TakenAt: time.Now()}, Offset: 100})
	f.mustPass()
	f.mustPass()

	f.clock.Step(5 * time.Second)
	askForBackup(t, f, "b1")
	f.mustPass()
	jobs = redisBackupJobs(t, f.obj.Namespace)
	if len(jobs) != 2 || jobs[1].Annotations[redisbackup.RequestAnnotation] != "b1" {
		t.Fatalf("jobs %v after the request b1, want a second one started for it", jobNames(jobs))
	}
	// In the write that records the request, the last backup is its Job's.
	if info := f.obj.Status.BackupInfo; f.lastRequest() != "b1" || info.BackupStatus != redisv1alpha1.BackupStatusRunning ||
		info.LastScheduleTime == nil || !info.LastScheduleTime.Time.Equal(redisbackup.Scheduled(jobs[1].Annotations, time.Time{})) {
		t.Fatalf("backupInfo %+v, want the request b1 recorded with its Job's start, Running", info)
	}
	version := f.obj.ResourceVersion
	f.mustPass()
	if f.obj.ResourceVersion != version {
		t.Errorf("the pass after the Job's start wrote the status again: %+v", f.obj.Status.BackupInfo)
	}

	// A new request while it runs waits for it to end.
	f.clock.Step(5 * time.Second)
	askForBackup(t, f, "b2")
	f.mustPass()
	if n := len(redisBackupJobs(t, f.obj.Namespace)); n != 2 || f.lastRequest() != "b1" {
		t.Fatalf("%d jobs, last request %q while a backup runs, want 2 and b1", n, f.lastRequest())
	}
	endBackupJob(t, &jobs[1], backuprun.RedisResult{Report: backuprun.Report{Key: "k2", TakenAt: time.Now()}, Offset: 200})
	f.mustPass()
	f.mustPass()
	jobs = redisBackupJobs(t, f.obj.Namespace)
	if len(jobs) != 3 || jobs[2].Annotations[redisbackup.RequestAnnotation] != "b2" || f.lastRequest() != "b2" {
		t.Fatalf("jobs %v, last request %q once the backup ended, want a third Job for b2", jobNames(jobs), f.lastRequest())
	}

	// The same value again starts nothing.
	endBackupJob(t, &jobs[2], backuprun.RedisResult{Report: backuprun.Report{Key: "k3", TakenAt: time.Now()}, Offset: 300})
	for range 3 {
		f.clock.Step(5 * time.Second)
		f.mustPass()
	}
	if jobs = redisBackupJobs(t, f.obj.Namespace); len(jobs) != 3 {
		t.Fatalf("jobs %v with the request b2 handled, want no more", jobNames(jobs))
	}
	if info := f.obj.Status.BackupInfo; info.LastBackup != "k3" || info.BackupStatus != redisv1alpha1.BackupStatusSucceeded {
		t.Errorf("backupInfo %+v, want the request's backup k3 recorded", info)
	}
}

// Without spec.backup, a backup request is refused once, by a Warning
// event that says why, and recorded so that it is not refused again.
func TestRedisBackupNowRefusedWithoutSpecBackup(t *testing.T) {
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 100,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0}}}
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	recorder := events.NewFakeRecorder(100)
	f.r = controller.NewObservedRedisReconciler(k8s, f.redis, f.clock, failoverWindow, prometheus.NewRegistry(), recorder)
	f.mustPass()
	settleStatefulSet(t, f)
	f.mustPass()
	askForBackup(t, f, "b1")
	f.mustPass()
	f.mustPass()
	if f.lastRequest() != "b1" {
		t.Fatalf("backupInfo %+v, want the refused request b1 recorded", f.obj.Status.BackupInfo)
	}
	if n := len(redisBackupJobs(t, f.obj.Namespace)); n != 0 {
		t.Fatalf("%d backup jobs without spec.backup, want none", n)
	}
	refusals := slices.DeleteFunc(recorded(recorder), func(e string) bool { return !strings.Contains(e, " "+redisv1alpha1.EventBackupRefused+" ") })
	if len(refusals) != 1 || !strings.Contains(refusals[0], "Warning") || !strings.Contains(refusals[0], "spec.backup") {
		t.Errorf("events %v, want one Warning %s naming spec.backup", refusals, redisv1alpha1.EventBackupRefused)
	}
	if r := f.readyReason(); r != conditions.ReasonAvailable {
		t.Errorf("Ready reason %s after a refused request, want %s", r, conditions.ReasonAvailable)
	}
}

// jobNames are the names of jobs.
func jobNames(jobs []batchv1.Job) []string {
	out := make([]string, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}
