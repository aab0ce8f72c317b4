package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Backup asks for a backup of a data service now. A
// RedisEnterpriseCluster gets the backup request annotation
// (redisv1alpha1.BackupNowAnnotation) with a new ID made of now, which it
// returns; one without spec.backup is refused (the operator would refuse
// it too: there is nowhere to put it). An EtcdCluster is backed up by an
// EtcdBackup: Backup creates a one-shot EtcdBackup (no interval) that
// stores where the cluster's newest EtcdBackup does, and returns its
// name; without one, it is refused, naming the kind.
func Backup(ctx context.Context, c client.Client, obj client.Object, now time.Time) (string, error) {
	switch o := obj.(type) {
	case *redisv1alpha1.RedisEnterpriseCluster:
		if o.Spec.Backup == nil {
			return "", fmt.Errorf("RedisEnterpriseCluster %s has no spec.backup: set it to say where backups go (S3 or a claim)", o.Name)
		}
		id := strconv.FormatInt(now.Unix(), 10)
		return id, SetAnnotation(ctx, c, o, redisv1alpha1.BackupNowAnnotation, &id)
	case *etcdv1beta2.EtcdCluster:
		b, err := oneShotEtcdBackup(ctx, c, o, now)
		if err != nil {
			return "", err
		}
		if err := c.Create(ctx, b); err != nil {
			return "", fmt.Errorf("create EtcdBackup %s: %w", b.Name, err)
		}
		return b.Name, nil
	}
	return "", fmt.Errorf("only an EtcdCluster or a RedisEnterpriseCluster is backed up, not a %T", obj)
}

// oneShotEtcdBackup is an EtcdBackup of the cluster o that takes one
// snapshot, stored where the newest EtcdBackup of o stores them.
func oneShotEtcdBackup(ctx context.Context, c client.Reader, o *etcdv1beta2.EtcdCluster, now time.Time) (*etcdv1beta2.EtcdBackup, error) {
	list := &etcdv1beta2.EtcdBackupList{}
	if err := c.List(ctx, list, client.InNamespace(o.Namespace)); err != nil {
		return nil, fmt.Errorf("list EtcdBackups: %w", err)
	}
	of := slices.DeleteFunc(list.Items, func(b etcdv1beta2.EtcdBackup) bool { return b.Spec.ClusterName != o.Name })
	if len(of) == 0 {
		return nil, fmt.Errorf("EtcdCluster %s is backed up by an EtcdBackup, which says where the snapshot goes, and none names it: "+
			"create an EtcdBackup with spec.clusterName %s (without spec.backupPolicy.backupIntervalInSecond, it takes one snapshot)", o.Name, o.Name)
	}
	newest := slices.MaxFunc(of, func(a, b etcdv1beta2.EtcdBackup) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	spec := *newest.Spec.DeepCopy()
	if spec.BackupPolicy != nil {
		spec.BackupPolicy.BackupIntervalInSecond = 0
	}
	return &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name + "-now-" + strconv.FormatInt(now.Unix(), 10)},
		Spec:       spec,
	}, nil
}

// backupRuns is what a wait says while the backup runs.
const backupRuns = "the backup runs"

// BackupWatch follows the backup Backup asked for, read after read.
type BackupWatch struct {
	// Request is what Backup returned: a RedisEnterpriseCluster's request
	// ID, or the name of the EtcdBackup it created.
	Request string
	// started is, for a RedisEnterpriseCluster, when the backup of
	// Request started, as the status said once it named the request.
	started *metav1.Time
}

// Outcome says how the backup went, from obj as read now (the
// RedisEnterpriseCluster, or the EtcdBackup Backup created): done once it
// ended, with what it stored or why it failed (failed), or, not done, what
// it waits for.
func (w *BackupWatch) Outcome(obj client.Object) (done, failed bool, message string) {
	switch o := obj.(type) {
	case *redisv1alpha1.RedisEnterpriseCluster:
		info := o.Status.BackupInfo
		if info == nil || info.LastRequest != w.Request {
			return false, false, "waiting for the operator to start the backup (it starts while the cluster is Running, once the backup that runs, if any, has ended)"
		}
		if o.Spec.Backup == nil {
			return true, true, "refused: the cluster has no spec.backup (see its BackupRefused event)"
		}
		// The status that first names the request has the request's
		// backup as its last one (or, when it was read late, a later one).
		if w.started == nil {
			w.started = info.LastScheduleTime
		}
		switch {
		case info.LastScheduleTime == nil || w.started == nil:
			return false, false, backupRuns
		case !info.LastScheduleTime.Equal(w.started):
			return true, true, "a later backup started before this one's outcome was read: see status.backupInfo"
		case info.BackupStatus == redisv1alpha1.BackupStatusSucceeded:
			return true, false, fmt.Sprintf("stored %s (replication offset %d)", info.LastBackup, info.ReplicationOffset)
		case info.BackupStatus == redisv1alpha1.BackupStatusFailed:
			return true, true, "failed: " + info.BackupFailureReason
		}
		return false, false, backupRuns
	case *etcdv1beta2.EtcdBackup:
		switch {
		case o.Status.Succeeded:
			return true, false, fmt.Sprintf("stored %s (revision %d)", o.Status.LastBackup, o.Status.EtcdRevision)
		case o.Status.Reason != "":
			return true, true, "failed: " + o.Status.Reason
		}
		return false, false, backupRuns
	}
	return true, true, fmt.Sprintf("a %T is not backed up", obj)
}

// Wait reads obj every interval until Outcome says the backup ended, or
// ctx ends (an error then, saying what it waited for), and returns the
// outcome.
func (w *BackupWatch) Wait(ctx context.Context, c client.Reader, obj client.Object, interval time.Duration) (failed bool, message string, err error) {
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return true, "", err
		}
		done, failed, message := w.Outcome(obj)
		if done {
			return failed, message, nil
		}
		select {
		case <-ctx.Done():
			return true, message, fmt.Errorf("gave up waiting (%s): %w", message, ctx.Err())
		case <-time.After(interval):
		}
	}
}
