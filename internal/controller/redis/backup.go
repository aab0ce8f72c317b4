package redis

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
	"github.com/app-operator/app-operator/internal/backup"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/clustermetrics"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
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
	gauges *clustermetrics.BackupGauges
}

func newRedisBackups(image string, reg prometheus.Registerer) *redisBackups {
	return &redisBackups{image: cmp.Or(image, backup.DefaultSnapshotImage), gauges: clustermetrics.NewBackupGauges(reg, "RedisEnterpriseCluster")}
}

// redisBackupsSeen is what a pass read of a cluster's backups: its Jobs,
// newest first, and what each did.
type redisBackupsSeen struct {
	jobs []*batchv1.Job
	runs []backuprun.RedisRun
}

// startedFor reports whether a Job read was started for the backup
// request request.
func (s *redisBackupsSeen) startedFor(request string) bool {
	for _, j := range s.jobs {
		if j.Annotations[redisbackup.RequestAnnotation] == request {
			return true
		}
	}
	return false
}

// pendingRequest is the backup request (BackupNowAnnotation) of o not yet
// handled: neither recorded as the last one nor answered by a Job read;
// "" when there is none.
func pendingRequest(o *redisv1alpha1.RedisEnterpriseCluster, seen *redisBackupsSeen) string {
	request := o.Annotations[redisv1alpha1.BackupNowAnnotation]
	if request == "" || (o.Status.BackupInfo != nil && o.Status.BackupInfo.LastRequest == request) || seen.startedFor(request) {
		return ""
	}
	return request
}

// observe reads the backup Jobs of o.
func (b *redisBackups) observe(ctx context.Context, c client.Reader, o *redisv1alpha1.RedisEnterpriseCluster) (redisBackupsSeen, error) {
	var seen redisBackupsSeen
	jobs, err := backup.JobsOf(ctx, c, o, redisbackup.Selector(o.Name))
	if err != nil {
		return seen, err
	}
	seen.jobs = jobs
	for _, j := range jobs {
		run, err := backup.ReadRun(ctx, c, j, redisbackup.ContainerName, backuprun.ParseRedis)
		if err != nil {
			return seen, err
		}
		run.Started = metav1.NewTime(redisbackup.Scheduled(j.Annotations, j.CreationTimestamp.Time))
		seen.runs = append(seen.runs, run)
	}
	return seen, nil
}

// handledRequest is the backup request a pass answered: its ID ("" when
// none), and when the Job started for it (zero when it was refused).
type handledRequest struct {
	id      string
	started time.Time
}

// setStatus sets status.backupInfo from what the pass read, and the
// gauge of the last backup's time. handled is the backup request the
// pass answered: it, or the request a Job read was started for, is
// recorded as the last one, and a Job the pass started is the last
// backup, Running, in the same write: a status that names a request
// describes its backup or a later one.
func (b *redisBackups) setStatus(o *redisv1alpha1.RedisEnterpriseCluster, seen *redisBackupsSeen, handled handledRequest) {
	info := o.Status.BackupInfo
	if request := o.Annotations[redisv1alpha1.BackupNowAnnotation]; handled.id == "" && request != "" && seen.startedFor(request) {
		handled.id = request
	}
	if handled.id != "" {
		info = info.DeepCopy()
		if info == nil {
			info = &redisv1alpha1.BackupInfo{}
		}
		info.LastRequest = handled.id
	}
	o.Status.BackupInfo = status.RedisBackupInfo(info, o.Spec.Backup, seen.runs)
	if info := o.Status.BackupInfo; info != nil && !handled.started.IsZero() {
		// As the next pass reads it from the Job (ScheduledAnnotation).
		started := metav1.NewTime(handled.started.UTC().Truncate(time.Second))
		info.LastScheduleTime, info.BackupStatus = &started, redisv1alpha1.BackupStatusRunning
	}
	if info := o.Status.BackupInfo; info != nil {
		b.gauges.Record(client.ObjectKeyFromObject(o), info.LastBackupTime)
	}
}

// step, on a Running cluster, prunes the old Jobs, says once how the last
// backup ended, and starts the next when it is due or asked for (the
// BackupNowAnnotation, once the backup that runs, if any, has ended). It
// returns the step taken (none: a zero Step), when to look again, and the
// backup request it handled (none when its id is ""): started, or refused
// without spec.backup (a BackupRefused event says so).
func (b *redisBackups) step(ctx context.Context, c client.Client, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind, seen *redisBackupsSeen, now time.Time) (engine.Step, handledRequest, error) {
	if err := backup.PruneJobs(ctx, c, seen.jobs, func(i int) bool { return seen.runs[i].Done }); err != nil {
		return engine.Step{}, handledRequest{}, err
	}
	request := pendingRequest(o, seen)
	if o.Spec.Backup == nil {
		if request == "" {
			return engine.Step{}, handledRequest{}, nil
		}
		return engine.Step{Notices: []engine.Notice{{Type: corev1.EventTypeWarning, Reason: redisv1alpha1.EventBackupRefused, Action: backup.Action,
			Message: fmt.Sprintf("Backup request %s refused: the cluster has no spec.backup to say where a backup goes", request)}}}, handledRequest{id: request}, nil
	}
	if len(seen.runs) > 0 && !seen.runs[0].Done {
		return engine.Step{RequeueAfter: redisRecheck}, handledRequest{}, nil
	}
	if ev := redisBackupEnded(o, seen.runs); ev != nil {
		return engine.Step{Took: ev.Note, Event: &ev.StepEvent, RequeueAfter: redisStepInterval}, handledRequest{}, nil
	}
	if wait := nextBackup(o, seen.runs, now); wait > 0 && request == "" {
		return engine.Step{RequeueAfter: min(wait, redisRecheck)}, handledRequest{}, nil
	}
	name := redisbackup.JobName(o.Name, now)
	nodes := make([]string, 0, redisenterprisecluster.Nodes(&o.Spec))
	for i := range redisenterprisecluster.Nodes(&o.Spec) {
		nodes = append(nodes, net.JoinHostPort(redisenterprisecluster.NodeHost(o.Name, redisenterprisecluster.PodName(o.Name, i)), strconv.Itoa(redisenterprisecluster.Port)))
	}
	in := redisbackup.JobInput{Name: name, Scheduled: now, Image: b.image, Nodes: nodes, Secret: o.Name, PasswordKey: redisenterprisecluster.SecretPassword,
		Request: request}
	if o.Spec.TLS != nil {
		in.TLSSecret, in.ServerName = redisenterprisecluster.TLSSecretName(o.Name, o.Spec.TLS), redisenterprisecluster.ServiceHost(o.Name, o.Namespace)
	}
	ac, err := redisbackup.Job(resources.OwnerOf(o, gvk), o.Spec.Backup, in)
	if err != nil {
		return engine.Step{}, handledRequest{}, err
	}
	d, err := engine.NewDesired(ac)
	if err != nil {
		return engine.Step{}, handledRequest{}, err
	}
	if _, err := engine.Apply(ctx, c, d, engine.FieldOwner(redisbackup.KindName)); err != nil {
		return engine.Step{}, handledRequest{}, fmt.Errorf("start backup job %s: %w", name, err)
	}
	took := fmt.Sprintf("Started backup Job %s", name)
	if request != "" {
		took += " for the backup request " + request
	}
	handled := handledRequest{started: now}
	if request != "" {
		handled.id = request
	}
	return engine.Step{Took: took, RequeueAfter: redisRecheck, Event: backup.Started()}, handled, nil
}

// nextBackup is how long until o's next backup is due (see
// backup.Next): the last started, by its Job or, once the Job is pruned,
// by the status.
func nextBackup(o *redisv1alpha1.RedisEnterpriseCluster, runs []backuprun.RedisRun, now time.Time) time.Duration {
	var last time.Time
	if len(runs) > 0 {
		last = runs[0].Started.Time
	}
	if info := o.Status.BackupInfo; info != nil && info.LastScheduleTime != nil && info.LastScheduleTime.After(last) {
		last = info.LastScheduleTime.Time
	}
	return backup.Next(last, o.Spec.Backup.Every(), now)
}

// redisBackupEnded is the event of the newest backup when it ended and
// the status does not say so yet (it names that Job's start and end);
// nil otherwise.
func redisBackupEnded(o *redisv1alpha1.RedisEnterpriseCluster, runs []backuprun.RedisRun) *backup.Ended {
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
		return backup.Succeeded(fmt.Sprintf("Backup Job %s stored %s at replication offset %d", r.Job, key, offset))
	}
	return backup.Failed(backuprun.Failure(r).Message)
}
