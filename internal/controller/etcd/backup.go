package etcd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backup"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/clustermetrics"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete

// BackupKind is the EtcdBackup's controller: each backup is a Job that
// runs the snapshot tool (see internal/resources/etcdbackup); the
// controller starts them on the schedule, reads what each said, and
// prunes the old ones. It never changes the cluster it backs up.
func BackupKind(opts Options) engine.Kind[*etcdv1beta2.EtcdBackup] {
	gvk := etcdv1beta2.GroupVersion.WithKind("EtcdBackup")
	ops := &backupOps{image: cmp.Or(opts.SnapshotImage, backup.DefaultSnapshotImage), clock: opts.Clock}
	gauges := clustermetrics.NewBackupGauges(opts.Metrics, gvk.Kind)
	k := engine.Kind[*etcdv1beta2.EtcdBackup]{
		Name:   etcdbackup.KindName,
		GVK:    gvk,
		New:    func() *etcdv1beta2.EtcdBackup { return &etcdv1beta2.EtcdBackup{} },
		Owns:   []client.Object{&batchv1.Job{}},
		Forget: gauges.Forget,
	}
	return engine.Phases[*etcdv1beta2.EtcdBackup, struct{}, backupSeen, backupPlan, struct{}]{
		Observe: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdBackup, _ struct{}) (backupSeen, error) {
			return ops.observe(ctx, c, o)
		},
		// The Jobs are started by the step, one per scheduled backup:
		// nothing is applied every pass.
		Build: func(*etcdv1beta2.EtcdBackup, *backupPass) ([]runtime.ApplyConfiguration, error) { return nil, nil },
		Plan: func(o *etcdv1beta2.EtcdBackup, pass *backupPass, _ engine.Observed, scope engine.Scope) backupPlan {
			if scope == engine.SafetySteps {
				return backupPlan{}
			}
			return planBackup(o, &pass.Observed)
		},
		Act: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdBackup, pass *backupPass) (struct{}, engine.Step, error) {
			s, err := ops.act(ctx, c, o, gvk, &pass.Observed, pass.Decision)
			return struct{}{}, s, err
		},
		SetStatus: func(o *etcdv1beta2.EtcdBackup, pass *backupPass, report engine.Report, now metav1.Time) {
			status.EtcdBackup(&o.Status, o.Generation, pass.Observed.runs, report.Step.Waiting, report.Failure, now)
			gauges.Record(client.ObjectKeyFromObject(o), o.Status.LastSuccessDate)
		},
	}.With(k)
}

// backupPass is the record of an EtcdBackup's pass.
type backupPass = engine.PassOf[struct{}, backupSeen, backupPlan, struct{}]

// backupPlan is a backup's step: prune the old Jobs (in every pass but a
// safety step's), then start the Job called start (when set); step is
// what the pass reports.
type backupPlan struct {
	prune bool
	start string
	step  engine.Step
}

// backupOps reads and starts the Jobs of EtcdBackups.
type backupOps struct {
	image string
	clock interface{ Now() time.Time }
}

// backupSeen is what a pass read of an EtcdBackup: the endpoints of the
// cluster to back up (or why there are none), and its Jobs, newest first.
type backupSeen struct {
	now       time.Time
	endpoints []string
	// clientTLS names the Secret of the client certificate of members
	// that talk TLS; empty for plain members.
	clientTLS string
	failure   *conditions.Failure
	waiting   string
	runs      []backuprun.EtcdRun
	jobs      []*batchv1.Job
}

func (b *backupOps) now() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

func (b *backupOps) observe(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdBackup) (backupSeen, error) {
	seen := backupSeen{now: b.now()}
	switch {
	case len(o.Spec.EtcdEndpoints) > 0:
		seen.endpoints = o.Spec.EtcdEndpoints
		seen.clientTLS = o.Spec.ClientTLSSecret
	default:
		cluster := &etcdv1beta2.EtcdCluster{}
		err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.ClusterName}, cluster)
		switch {
		case apierrors.IsNotFound(err):
			seen.failure = &conditions.Failure{Reason: etcdv1beta2.ReasonClusterNotFound, Message: fmt.Sprintf(
				"spec.clusterName: no EtcdCluster %s in namespace %s", o.Spec.ClusterName, o.Namespace)}
		case err != nil:
			return seen, err
		case cluster.Spec.Hibernate:
			seen.waiting = fmt.Sprintf("EtcdCluster %s is hibernated (spec.hibernate): no backup is taken until it wakes", cluster.Name)
		case len(cluster.Status.Members) == 0:
			seen.waiting = fmt.Sprintf("Waiting for EtcdCluster %s to have members", cluster.Name)
		default:
			for _, m := range cluster.Status.Members {
				seen.endpoints = append(seen.endpoints, etcdcluster.ClientURL(etcdcluster.SchemeOf(&cluster.Spec), cluster.Name, cluster.Namespace, m.Name))
			}
			seen.clientTLS = o.Spec.ClientTLSSecret
			if seen.clientTLS == "" && cluster.Spec.TLSEnabled() {
				_, _, seen.clientTLS = cluster.Spec.TLSSecrets(cluster.Name)
			}
		}
	}
	var err error
	if seen.jobs, err = backup.JobsOf(ctx, c, o, etcdbackup.Selector(o.Name)); err != nil {
		return seen, err
	}
	for _, j := range seen.jobs {
		run, err := backupRunOf(ctx, c, j)
		if err != nil {
			return seen, err
		}
		seen.runs = append(seen.runs, run)
	}
	return seen, nil
}

// backupRunOf is what the Job j did: running, or done with what its
// last pod's snapshot tool said.
func backupRunOf(ctx context.Context, c client.Reader, j *batchv1.Job) (backuprun.EtcdRun, error) {
	run, err := backup.ReadRun(ctx, c, j, etcdbackup.ContainerName, backuprun.ParseEtcd)
	run.Generation, _ = strconv.ParseInt(j.Annotations[etcdbackup.GenerationAnnotation], 10, 64)
	return run, err
}

// planBackup decides a backup's step from what the pass read.
func planBackup(o *etcdv1beta2.EtcdBackup, seen *backupSeen) backupPlan {
	plan := backupPlan{prune: true}
	switch {
	case seen.failure != nil:
		plan.step = engine.Step{Failure: seen.failure}
		return plan
	case len(seen.runs) > 0 && !seen.runs[0].Done:
		plan.step = engine.Step{Waiting: fmt.Sprintf("Backup Job %s is running", seen.runs[0].Job)}
		return plan
	}
	if ev := backupEnded(o, seen.runs); ev != nil {
		// The last backup ended since the status was written: the
		// event says how, once.
		plan.step = engine.Step{Took: ev.Note, Event: &ev.StepEvent}
		return plan
	}
	if seen.waiting != "" {
		plan.step = engine.Step{Waiting: seen.waiting}
		return plan
	}
	switch wait := nextBackup(o, seen.runs, seen.now); {
	case wait < 0:
	case wait > 0:
		plan.step = engine.Step{RequeueAfter: wait}
	default:
		plan.start = etcdbackup.JobName(o.Name, seen.now)
		plan.step = engine.Step{Took: fmt.Sprintf("Started backup Job %s", plan.start),
			Event: backup.Started()}
	}
	return plan
}

// act prunes the old Jobs and starts the one plan names.
func (b *backupOps) act(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdBackup, gvk schema.GroupVersionKind, seen *backupSeen, plan backupPlan) (engine.Step, error) {
	if !plan.prune {
		return plan.step, nil
	}
	if err := b.prune(ctx, c, seen); err != nil {
		return engine.Step{}, err
	}
	if plan.start == "" {
		return plan.step, nil
	}
	ac, err := etcdbackup.Job(resources.OwnerOf(o, gvk), o.Generation, &o.Spec, seen.endpoints, seen.clientTLS, b.image, plan.start)
	if err != nil {
		return engine.Step{}, err
	}
	d, err := engine.NewDesired(ac)
	if err != nil {
		return engine.Step{}, err
	}
	if _, err := engine.Apply(ctx, c, d, engine.FieldOwner(etcdbackup.KindName)); err != nil {
		return engine.Step{}, fmt.Errorf("start backup job %s: %w", plan.start, err)
	}
	return plan.step, nil
}

// nextBackup is how long until o's next backup is due (see backup.Next):
// the last is the backup of o's generation; spec.interval, when set,
// the time between two.
func nextBackup(o *etcdv1beta2.EtcdBackup, runs []backuprun.EtcdRun, now time.Time) time.Duration {
	var last time.Time
	if i := slices.IndexFunc(runs, func(r backuprun.EtcdRun) bool { return r.Generation == o.Generation }); i >= 0 {
		last = runs[i].Started.Time
	}
	return backup.Next(last, time.Duration(o.Spec.Interval())*time.Second, now)
}

// prune deletes the finished Jobs beyond the newest backupJobsKept, with
// their pods.
func (b *backupOps) prune(ctx context.Context, c engine.Clients, seen *backupSeen) error {
	return backup.PruneJobs(ctx, c, seen.jobs, func(i int) bool { return seen.runs[i].Done })
}

// backupEnded is the event of the newest backup when it ended and the
// status does not say so yet; nil otherwise.
func backupEnded(o *etcdv1beta2.EtcdBackup, runs []backuprun.EtcdRun) *backup.Ended {
	if len(runs) == 0 || !runs[0].Done {
		return nil
	}
	r := runs[0]
	if r.Succeeded && r.Result != nil {
		if o.Status.LastBackup == r.Result.Key && o.Status.Succeeded {
			return nil
		}
		return backup.Succeeded(fmt.Sprintf("Backup Job %s stored %s at revision %d", r.Job, r.Result.Key, r.Result.Revision))
	}
	failure := backuprun.Failure(r)
	if !o.Status.Succeeded && o.Status.Reason == failure.Message {
		return nil
	}
	return backup.Failed(failure.Message)
}
