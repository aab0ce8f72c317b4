package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backuprun"
)

func TestEtcdBackupStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(m int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(m) * time.Minute)) }
	stored := func(job string, m int, rev int64) backuprun.EtcdRun {
		return backuprun.EtcdRun{Job: job, Started: at(m), Done: true, Succeeded: true,
			Result: &backuprun.EtcdResult{Report: backuprun.Report{Key: "b/k" + job, TakenAt: at(m).Time}, Revision: rev, EtcdVersion: "3.6.16"}}
	}
	failed := backuprun.EtcdRun{Job: "j3", Started: at(3), Done: true,
		Result: &backuprun.EtcdResult{Report: backuprun.Report{Reason: "AccessDenied", Error: "the store refused the credentials of Secret aws"}}}
	silent := backuprun.EtcdRun{Job: "j3", Started: at(3), Done: true, Message: "Job j3 failed: DeadlineExceeded: Job was active longer than specified deadline"}
	running := backuprun.EtcdRun{Job: "j4", Started: at(4)}
	recorded := etcdv1beta2.EtcdBackupStatus{LastBackup: "b/kj0", EtcdRevision: 5, LastSuccessDate: &metav1.Time{Time: at(0).Time}, Succeeded: true}

	tests := []struct {
		name                         string
		before                       etcdv1beta2.EtcdBackupStatus
		runs                         []backuprun.EtcdRun
		waiting                      string
		failure                      *conditions.Failure
		ready, progressing, degraded string
		lastBackup                   string
		revision                     int64
		succeeded                    bool
	}{
		{name: "none yet", ready: "False " + etcdv1beta2.ReasonBackupPending, progressing: "True " + etcdv1beta2.ReasonBackupPending, degraded: "False AsExpected"},
		{name: "waiting for the cluster", waiting: "Waiting for EtcdCluster x to have members",
			ready: "False " + etcdv1beta2.ReasonWaitingForCluster, progressing: "True " + etcdv1beta2.ReasonWaitingForCluster, degraded: "False AsExpected"},
		{name: "the first running", runs: []backuprun.EtcdRun{running},
			ready: "False BackupRunning", progressing: "True BackupRunning", degraded: "False AsExpected"},
		{name: "stored", runs: []backuprun.EtcdRun{stored("j2", 2, 9), stored("j1", 1, 8)},
			ready: "True Available", progressing: "False RolloutComplete", degraded: "False AsExpected", lastBackup: "b/kj2", revision: 9, succeeded: true},
		{name: "stored, the next running", runs: []backuprun.EtcdRun{running, stored("j2", 2, 9)},
			ready: "True Available", progressing: "True BackupRunning", degraded: "False AsExpected", lastBackup: "b/kj2", revision: 9, succeeded: true},
		{name: "failed, the snapshot before kept", before: recorded, runs: []backuprun.EtcdRun{failed},
			ready: "False AccessDenied", progressing: "False", degraded: "True AccessDenied", lastBackup: "b/kj0", revision: 5},
		{name: "failed without a word from the tool", runs: []backuprun.EtcdRun{silent, stored("j2", 2, 9)},
			ready: "False BackupFailed", progressing: "False", degraded: "True BackupFailed", lastBackup: "b/kj2", revision: 9},
		{name: "a pruned older success does not replace a newer one", before: etcdv1beta2.EtcdBackupStatus{LastBackup: "b/kj9", EtcdRevision: 90, LastSuccessDate: &metav1.Time{Time: at(9).Time}},
			runs:  []backuprun.EtcdRun{stored("j2", 2, 9)},
			ready: "True Available", progressing: "False RolloutComplete", degraded: "False AsExpected", lastBackup: "b/kj9", revision: 90, succeeded: true},
		{name: "the cluster missing", runs: []backuprun.EtcdRun{stored("j2", 2, 9)}, failure: &conditions.Failure{Reason: etcdv1beta2.ReasonClusterNotFound, Message: "spec.clusterName: no EtcdCluster x"},
			ready: "False ClusterNotFound", progressing: "False", degraded: "True ClusterNotFound", lastBackup: "b/kj2", revision: 9, succeeded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.before
			EtcdBackup(&st, 3, tt.runs, tt.waiting, tt.failure, metav1.Now())
			for _, c := range []struct{ condType, want string }{{conditions.Ready, tt.ready}, {conditions.Progressing, tt.progressing}, {conditions.Degraded, tt.degraded}} {
				got := meta.FindStatusCondition(st.Conditions, c.condType)
				if got == nil || got.ObservedGeneration != 3 {
					t.Fatalf("%s = %+v", c.condType, got)
				}
				if s := string(got.Status) + " " + got.Reason; s != c.want && string(got.Status) != c.want {
					t.Errorf("%s = %s (%s), want %s", c.condType, s, got.Message, c.want)
				}
			}
			if st.LastBackup != tt.lastBackup || st.EtcdRevision != tt.revision || st.Succeeded != tt.succeeded || st.ObservedGeneration != 3 {
				t.Errorf("status %+v, want last backup %q at %d, succeeded %v", st, tt.lastBackup, tt.revision, tt.succeeded)
			}
			if len(tt.runs) > 0 && (st.LastScheduleTime == nil || !st.LastScheduleTime.Equal(&tt.runs[0].Started)) {
				t.Errorf("last schedule %v, want %v", st.LastScheduleTime, tt.runs[0].Started)
			}
		})
	}
}

func TestEtcdRestoreStatus(t *testing.T) {
	st := &etcdv1beta2.EtcdRestoreStatus{}
	EtcdRestore(st, 1, "EtcdCluster x is not Ready yet: Adding member x-1", nil, metav1.Now())
	if r := meta.FindStatusCondition(st.Conditions, conditions.Ready); st.Succeeded || r.Reason != etcdv1beta2.ReasonRestoring || st.Reason == "" {
		t.Errorf("restoring: %+v", st)
	}
	EtcdRestore(st, 1, "", nil, metav1.Now())
	if r := meta.FindStatusCondition(st.Conditions, conditions.Ready); !st.Succeeded || r.Status != metav1.ConditionTrue || st.Reason != "" {
		t.Errorf("done: %+v", st)
	}
	// Once it succeeded, what happens to the cluster later is the
	// cluster's to report.
	EtcdRestore(st, 1, "", &conditions.Failure{Reason: etcdv1beta2.ReasonClusterExists, Message: "m"}, metav1.Now())
	if r := meta.FindStatusCondition(st.Conditions, conditions.Ready); !st.Succeeded || r.Status != metav1.ConditionTrue {
		t.Errorf("after success: %+v", st)
	}
	fresh := &etcdv1beta2.EtcdRestoreStatus{}
	EtcdRestore(fresh, 1, "", &conditions.Failure{Reason: etcdv1beta2.ReasonClusterExists, Message: "spec.etcdCluster.name: exists"}, metav1.Now())
	if d := meta.FindStatusCondition(fresh.Conditions, conditions.Degraded); fresh.Succeeded || d.Status != metav1.ConditionTrue || d.Reason != etcdv1beta2.ReasonClusterExists {
		t.Errorf("refused: %+v", fresh)
	}
}
