package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete

// backupAction is the action of a backup's events.
const backupAction = "Backup"

// etcdBackupKind is the EtcdBackup's controller: each backup is a Job that
// runs the snapshot tool (see internal/resources/etcdbackup); the
// controller starts them on the schedule, reads what each said, and
// prunes the old ones. It never changes the cluster it backs up.
func etcdBackupKind(opts Options) kind[*etcdv1beta2.EtcdBackup] {
	gvk := etcdv1beta2.GroupVersion.WithKind("EtcdBackup")
	ops := &backupOps{image: cmp.Or(opts.SnapshotImage, DefaultSnapshotImage), clock: opts.Clock}
	gauges := newBackupGauges(opts.Metrics, gvk.Kind)
	k := kind[*etcdv1beta2.EtcdBackup]{
		name:      etcdbackup.KindName,
		gvk:       gvk,
		newObject: func() *etcdv1beta2.EtcdBackup { return &etcdv1beta2.EtcdBackup{} },
		owns:      []client.Object{&batchv1.Job{}},
		forget:    gauges.forget,
	}
	return stepKind[*etcdv1beta2.EtcdBackup, backupLook]{
		look: ops.look,
		// The Jobs are started by the step, one per scheduled backup:
		// nothing is applied every pass.
		build: func(*etcdv1beta2.EtcdBackup, *backupLook) ([]runtime.ApplyConfiguration, error) { return nil, nil },
		step: func(ctx context.Context, c clients, o *etcdv1beta2.EtcdBackup, look *backupLook, _ observed, scope stepScope) (Step, error) {
			if scope == safetySteps {
				return Step{}, nil
			}
			return ops.step(ctx, c, o, gvk, look)
		},
		setStatus: func(o *etcdv1beta2.EtcdBackup, look *backupLook, pass report, now metav1.Time) {
			var runs []status.BackupRun
			if look != nil {
				runs = look.runs
			}
			status.EtcdBackup(&o.Status, o.Generation, runs, pass.step.Waiting, pass.failure, now)
			gauges.record(client.ObjectKeyFromObject(o), o.Status.LastSuccessDate)
		},
	}.with(k)
}

// DefaultSnapshotImage is the image of the snapshot tool when
// Options.SnapshotImage is empty: the operator's own.
const DefaultSnapshotImage = "app-operator:latest"

// backupOps reads and starts the Jobs of EtcdBackups.
type backupOps struct {
	image string
	clock interface{ Now() time.Time }
}

// backupLook is what a pass read of an EtcdBackup: the endpoints of the
// cluster to back up (or why there are none), and its Jobs, newest first.
type backupLook struct {
	now       time.Time
	endpoints []string
	// clientTLS names the Secret of the client certificate of members
	// that talk TLS; empty for plain members.
	clientTLS string
	failure   *status.Failure
	waiting   string
	runs      []status.BackupRun
	jobs      []*batchv1.Job
}

func (b *backupOps) now() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

func (b *backupOps) look(ctx context.Context, c clients, o *etcdv1beta2.EtcdBackup) (backupLook, error) {
	look := backupLook{now: b.now()}
	switch {
	case len(o.Spec.EtcdEndpoints) > 0:
		look.endpoints = o.Spec.EtcdEndpoints
		look.clientTLS = o.Spec.ClientTLSSecret
	default:
		cluster := &etcdv1beta2.EtcdCluster{}
		err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.ClusterName}, cluster)
		switch {
		case apierrors.IsNotFound(err):
			look.failure = &status.Failure{Reason: etcdbackup.ReasonClusterNotFound, Message: fmt.Sprintf(
				"spec.clusterName: no EtcdCluster %s in namespace %s", o.Spec.ClusterName, o.Namespace)}
		case err != nil:
			return look, err
		case len(cluster.Status.Members) == 0:
			look.waiting = fmt.Sprintf("Waiting for EtcdCluster %s to have members", cluster.Name)
		default:
			for _, m := range cluster.Status.Members {
				look.endpoints = append(look.endpoints, etcdcluster.ClientURL(etcdcluster.SchemeOf(&cluster.Spec), cluster.Name, cluster.Namespace, m.Name))
			}
			look.clientTLS = o.Spec.ClientTLSSecret
			if look.clientTLS == "" && cluster.Spec.TLSEnabled() {
				_, _, look.clientTLS = cluster.Spec.TLSSecrets(cluster.Name)
			}
		}
	}
	var err error
	if look.jobs, err = backupJobsOf(ctx, c, o, etcdbackup.Selector(o.Name)); err != nil {
		return look, err
	}
	for _, j := range look.jobs {
		run, err := backupRunOf(ctx, c, j)
		if err != nil {
			return look, err
		}
		look.runs = append(look.runs, run)
	}
	return look, nil
}

// backupRunOf is what the Job j did: running, or done with what its
// last pod's snapshot tool said.
func backupRunOf(ctx context.Context, c client.Reader, j *batchv1.Job) (status.BackupRun, error) {
	run, err := readBackupRun(ctx, c, j, etcdbackup.ContainerName, etcdbackup.ParseResult)
	run.Generation, _ = strconv.ParseInt(j.Annotations[etcdbackup.GenerationAnnotation], 10, 64)
	return run, err
}

func (b *backupOps) step(ctx context.Context, c clients, o *etcdv1beta2.EtcdBackup, gvk schema.GroupVersionKind, look *backupLook) (Step, error) {
	if err := b.prune(ctx, c, look); err != nil {
		return Step{}, err
	}
	if look.failure != nil {
		return Step{Failure: look.failure}, nil
	}
	if len(look.runs) > 0 && !look.runs[0].Done {
		return Step{Waiting: fmt.Sprintf("Backup Job %s is running", look.runs[0].Job)}, nil
	}
	if ev := backupEnded(o, look.runs); ev != nil {
		// The last backup ended since the status was written: the
		// event says how, once.
		return Step{Took: ev.note, Event: &ev.StepEvent}, nil
	}
	if look.waiting != "" {
		return Step{Waiting: look.waiting}, nil
	}
	switch wait := nextBackup(o, look.runs, look.now); {
	case wait < 0:
		return Step{}, nil
	case wait > 0:
		return Step{RequeueAfter: wait}, nil
	}
	name := etcdbackup.JobName(o.Name, look.now)
	ac, err := etcdbackup.Job(resources.OwnerOf(o, gvk), o.Generation, &o.Spec, look.endpoints, look.clientTLS, b.image, name)
	if err != nil {
		return Step{}, err
	}
	d, err := newDesiredChild(ac)
	if err != nil {
		return Step{}, err
	}
	if _, err := applyChild(ctx, c, d, FieldOwner(etcdbackup.KindName)); err != nil {
		return Step{}, fmt.Errorf("start backup job %s: %w", name, err)
	}
	return Step{Took: fmt.Sprintf("Started backup Job %s", name), Event: &StepEvent{Type: corev1.EventTypeNormal, Reason: EventBackupStarted, Action: backupAction}}, nil
}

// nextBackup is how long until o's next backup is due: 0 when it is due
// now (none yet for this generation, or the interval passed since the
// last), and never for a one-shot backup already taken (-1).
func nextBackup(o *etcdv1beta2.EtcdBackup, runs []status.BackupRun, now time.Time) time.Duration {
	i := slices.IndexFunc(runs, func(r status.BackupRun) bool { return r.Generation == o.Generation })
	if i < 0 {
		return 0
	}
	interval := o.Spec.Interval()
	if interval == 0 {
		return -1
	}
	return max(runs[i].Started.Add(time.Duration(interval)*time.Second).Sub(now), 0)
}

// prune deletes the finished Jobs beyond the newest backupJobsKept, with
// their pods.
func (b *backupOps) prune(ctx context.Context, c clients, look *backupLook) error {
	return pruneBackupJobs(ctx, c, look.jobs, func(i int) bool { return look.runs[i].Done })
}

// endedEvent is the event of a backup that ended, with its note.
type endedEvent struct {
	StepEvent
	note string
}

// backupEnded is the event of the newest backup when it ended and the
// status does not say so yet; nil otherwise.
func backupEnded(o *etcdv1beta2.EtcdBackup, runs []status.BackupRun) *endedEvent {
	if len(runs) == 0 || !runs[0].Done {
		return nil
	}
	r := runs[0]
	if r.Succeeded && r.Result != nil {
		if o.Status.LastBackup == r.Result.Key && o.Status.Succeeded {
			return nil
		}
		return &endedEvent{StepEvent{Type: corev1.EventTypeNormal, Reason: EventBackupSucceeded, Action: backupAction},
			fmt.Sprintf("Backup Job %s stored %s at revision %d", r.Job, r.Result.Key, r.Result.Revision)}
	}
	failure := status.BackupFailure(r)
	if !o.Status.Succeeded && o.Status.Reason == failure.Message {
		return nil
	}
	return &endedEvent{StepEvent{Type: corev1.EventTypeWarning, Reason: EventBackupFailed, Action: backupAction}, failure.Message}
}
