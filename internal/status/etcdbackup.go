package status

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backuprun"
)

// EtcdBackup sets the status of an EtcdBackup from its runs, newest
// first, and the pass's failure (nil on success). What the last
// successful snapshot was stays recorded after its Job is pruned. waiting
// is why no backup has started, when the cluster is not ready for one.
func EtcdBackup(st *etcdv1beta2.EtcdBackupStatus, generation int64, runs []backuprun.EtcdRun, waiting string, failure *conditions.Failure, now metav1.Time) {
	var running, ended *backuprun.EtcdRun
	for i := range runs {
		switch r := &runs[i]; {
		case !r.Done && running == nil && ended == nil:
			running = r
		case r.Done && ended == nil:
			ended = r
		}
	}
	if len(runs) > 0 {
		t := runs[0].Started
		st.LastScheduleTime = &t
	}
	for i := range runs {
		// The newest success the status does not hold yet.
		r := &runs[i]
		if !r.Succeeded || r.Result == nil || r.Result.Failed() {
			continue
		}
		if st.LastSuccessDate == nil || r.Result.TakenAt.After(st.LastSuccessDate.Time) {
			taken := metav1.NewTime(r.Result.TakenAt)
			st.LastSuccessDate = &taken
			st.LastBackup, st.EtcdRevision, st.EtcdVersion = r.Result.Key, r.Result.Revision, r.Result.EtcdVersion
		}
		break
	}
	var endedFailure *conditions.Failure
	if ended != nil {
		st.Succeeded = ended.Succeeded
		st.Reason = ""
		if !ended.Succeeded {
			endedFailure = backuprun.Failure(*ended)
			st.Reason = endedFailure.Message
		}
	}
	st.ObservedGeneration = generation

	c := newTriple()
	switch {
	case failure != nil:
		c.stuck(failure)
	case endedFailure != nil:
		c.stuck(endedFailure)
		if running != nil {
			say(&c.progressing, metav1.ConditionTrue, etcdv1beta2.ReasonBackupRunning, fmt.Sprintf("Backup Job %s is running", running.Job))
		}
	case ended != nil && running == nil:
		c.available(fmt.Sprintf("The last backup stored %s at revision %d", st.LastBackup, st.EtcdRevision))
	case ended != nil:
		c.available(fmt.Sprintf("The last backup stored %s at revision %d", st.LastBackup, st.EtcdRevision))
		say(&c.progressing, metav1.ConditionTrue, etcdv1beta2.ReasonBackupRunning, fmt.Sprintf("Backup Job %s is running", running.Job))
	case running != nil:
		c.changing(etcdv1beta2.ReasonBackupRunning, fmt.Sprintf("Backup Job %s is running", running.Job))
	case waiting != "":
		c.changing(etcdv1beta2.ReasonWaitingForCluster, waiting)
	default:
		c.changing(etcdv1beta2.ReasonBackupPending, "The first backup is about to start")
	}
	c.set(&st.Conditions, generation, now)
}

// EtcdRestore sets the status of an EtcdRestore: failed for failure,
// restoring while waiting says why, else succeeded. Once it succeeded it
// stays so.
func EtcdRestore(st *etcdv1beta2.EtcdRestoreStatus, generation int64, waiting string, failure *conditions.Failure, now metav1.Time) {
	c := newTriple()
	switch {
	case st.Succeeded:
		c.available("The restored cluster was Ready with every member")
	case failure != nil:
		c.stuck(failure)
		st.Reason = failure.Message
	case waiting != "":
		c.changing(etcdv1beta2.ReasonRestoring, waiting)
		st.Reason = waiting
	default:
		st.Succeeded, st.Reason = true, ""
		c.available("The restored cluster is Ready with every member")
	}
	st.ObservedGeneration = generation
	c.set(&st.Conditions, generation, now)
}
