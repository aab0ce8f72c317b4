package controller

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/status"
)

// redisBackups starts and reads the periodic backups of
// RedisEnterpriseClusters (spec.backup). Each backup is a Job that runs
// the Redis snapshot tool, which reads the dataset from a replica in sync
// with the primary and stores it (see internal/resources/redisbackup). A
// backup starts only while the cluster is Running, and never changes a
// node: a backup that fails is reported in status.backupInfo, not in the
// cluster's conditions.
type redisBackups struct {
	image  string
	gauges *backupGauges
}

func newRedisBackups(image string, reg prometheus.Registerer) *redisBackups {
	return &redisBackups{image: cmp.Or(image, DefaultSnapshotImage), gauges: newBackupGauges(reg, "RedisEnterpriseCluster")}
}

// redisBackupLook is what a pass read of a cluster's backups: its Jobs,
// newest first, and what each did.
type redisBackupLook struct {
	jobs []*batchv1.Job
	runs []status.RedisBackupRun
}

// look reads the backup Jobs of o.
func (b *redisBackups) look(ctx context.Context, c client.Reader, o *redisv1alpha1.RedisEnterpriseCluster) (redisBackupLook, error) {
	var look redisBackupLook
	jobs, err := backupJobsOf(ctx, c, o, redisbackup.Selector(o.Name))
	if err != nil {
		return look, err
	}
	look.jobs = jobs
	for _, j := range jobs {
		run, err := readBackupRun(ctx, c, j, redisbackup.ContainerName, redisbackup.ParseResult)
		if err != nil {
			return look, err
		}
		run.Started = metav1.NewTime(redisbackup.Scheduled(j.Annotations, j.CreationTimestamp.Time))
		look.runs = append(look.runs, run)
	}
	return look, nil
}

// setStatus sets status.backupInfo from what the pass read, and the
// gauge of the last backup's time.
func (b *redisBackups) setStatus(o *redisv1alpha1.RedisEnterpriseCluster, look *redisBackupLook) {
	o.Status.BackupInfo = status.RedisBackupInfo(o.Status.BackupInfo, o.Spec.Backup, look.runs)
	if info := o.Status.BackupInfo; info != nil {
		b.gauges.record(client.ObjectKeyFromObject(o), info.LastBackupTime)
	}
}

// step, on a Running cluster, prunes the old Jobs, says once how the last
// backup ended, and starts the next when it is due. It returns the step
// taken (none: a zero Step) and when to look again.
func (b *redisBackups) step(ctx context.Context, c client.Client, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind, look *redisBackupLook, now time.Time) (Step, error) {
	if err := pruneBackupJobs(ctx, c, look.jobs, func(i int) bool { return look.runs[i].Done }); err != nil {
		return Step{}, err
	}
	if o.Spec.Backup == nil {
		return Step{}, nil
	}
	if len(look.runs) > 0 && !look.runs[0].Done {
		return Step{RequeueAfter: redisRecheck}, nil
	}
	if ev := redisBackupEnded(o, look.runs); ev != nil {
		return Step{Took: ev.note, Event: &ev.StepEvent, RequeueAfter: redisStepInterval}, nil
	}
	if wait := b.nextBackup(o, look.runs, now); wait > 0 {
		return Step{RequeueAfter: min(wait, redisRecheck)}, nil
	}
	name := redisbackup.JobName(o.Name, now)
	nodes := make([]string, 0, rec.Nodes(&o.Spec))
	for i := range rec.Nodes(&o.Spec) {
		nodes = append(nodes, net.JoinHostPort(rec.NodeHost(o.Name, rec.PodName(o.Name, i)), strconv.Itoa(rec.Port)))
	}
	in := redisbackup.JobInput{Name: name, Scheduled: now, Image: b.image, Nodes: nodes, Secret: o.Name, PasswordKey: rec.SecretPassword}
	if o.Spec.TLS != nil {
		in.TLSSecret, in.ServerName = rec.TLSSecretName(o.Name, o.Spec.TLS), rec.ServiceHost(o.Name, o.Namespace)
	}
	ac, err := redisbackup.Job(resources.OwnerOf(o, gvk), o.Spec.Backup, in)
	if err != nil {
		return Step{}, err
	}
	d, err := newDesiredChild(ac)
	if err != nil {
		return Step{}, err
	}
	if _, err := applyChild(ctx, c, d, FieldOwner(redisbackup.KindName)); err != nil {
		return Step{}, fmt.Errorf("start backup job %s: %w", name, err)
	}
	return Step{Took: fmt.Sprintf("Started backup Job %s", name), RequeueAfter: redisRecheck,
		Event: &StepEvent{Type: corev1.EventTypeNormal, Reason: EventBackupStarted, Action: backupAction}}, nil
}

// nextBackup is how long until o's next backup is due: 0 when it is due
// now (none has started yet, or the interval passed since the last
// started, by its Job or, once the Job is pruned, by the status).
func (b *redisBackups) nextBackup(o *redisv1alpha1.RedisEnterpriseCluster, runs []status.RedisBackupRun, now time.Time) time.Duration {
	var last time.Time
	if len(runs) > 0 {
		last = runs[0].Started.Time
	}
	if info := o.Status.BackupInfo; info != nil && info.LastScheduleTime != nil && info.LastScheduleTime.After(last) {
		last = info.LastScheduleTime.Time
	}
	if last.IsZero() {
		return 0
	}
	return max(last.Add(redisbackup.Interval(o.Spec.Backup)).Sub(now), 0)
}

// redisBackupEnded is the event of the newest backup when it ended and
// the status does not say so yet (it names that Job's start and end);
// nil otherwise.
func redisBackupEnded(o *redisv1alpha1.RedisEnterpriseCluster, runs []status.RedisBackupRun) *endedEvent {
	if len(runs) == 0 || !runs[0].Done {
		return nil
	}
	r, info := runs[0], o.Status.BackupInfo
	ended := redisv1alpha1.BackupStatusFailed
	if r.Succeeded {
		ended = redisv1alpha1.BackupStatusSucceeded
	}
	if info != nil && info.BackupStatus == ended && info.LastScheduleTime != nil && info.LastScheduleTime.Equal(&r.Started) {
		return nil
	}
	if r.Succeeded {
		var key string
		var offset int64
		if r.Result != nil {
			key, offset = r.Result.Key, r.Result.Offset
		}
		return &endedEvent{StepEvent{Type: corev1.EventTypeNormal, Reason: EventBackupSucceeded, Action: backupAction},
			fmt.Sprintf("Backup Job %s stored %s at replication offset %d", r.Job, key, offset)}
	}
	return &endedEvent{StepEvent{Type: corev1.EventTypeWarning, Reason: EventBackupFailed, Action: backupAction}, status.BackupFailure(r).Message}
}
