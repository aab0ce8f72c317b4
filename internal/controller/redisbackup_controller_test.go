package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// redisBackupFixture is a Running redisFixture with spec.backup, whose
// events go to recorder.
func redisBackupFixture(t *testing.T, backup redisv1alpha1.Backup) (*redisFixture, *events.FakeRecorder, *prometheus.Registry) {
	t.Helper()
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 100,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0}}}
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	recorder, reg := events.NewFakeRecorder(100), prometheus.NewRegistry()
	f.r = controller.NewObservedRedisReconciler(k8s, f.redis, f.clock, failoverWindow, reg, recorder)
	get(t, f.obj)
	f.obj.Spec.Backup = &backup
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	settleStatefulSet(t, f)
	return f, recorder, reg
}

// settleStatefulSet says, as no StatefulSet controller runs here, that
// the fixture's StatefulSet has been seen.
func settleStatefulSet(t *testing.T, f *redisFixture) {
	t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: "r"}}
	get(t, sts)
	sts.Status.ObservedGeneration = sts.Generation
	if err := k8s.Status().Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
}

// redisBackupJobs are the backup Jobs of the cluster "r" in ns, oldest
// first.
func redisBackupJobs(t *testing.T, ns string) []batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(redisbackup.Selector("r"))); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// recorded drains the events the recorder holds.
func recorded(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A Running cluster with spec.backup gets a backup Job every interval:
// the tool reads the dataset from the nodes (never through the primary
// Service) and stores it in the bucket's subdir under the cluster's name;
// status.backupInfo records what each Job stored, or why it failed, while
// the cluster stays Ready; each end is an event.
func TestRedisBackupRunsAJobPerIntervalAndRecordsWhatItStored(t *testing.T) {
	f, recorder, reg := redisBackupFixture(t, redisv1alpha1.Backup{Interval: 60, MaxBackups: 5, BackupStorage: redisv1alpha1.BackupStorage{
		S3: &redisv1alpha1.S3Storage{AWSSecretName: "s3-creds", BucketName: "backups", Subdir: "prod", Endpoint: "http://s3.example:8333", ForcePathStyle: true}}})
	f.mustPass()
	f.mustPass()
	if f.obj.Status.State != redisv1alpha1.StateRunning {
		t.Fatalf("state %s, want Running", f.obj.Status.State)
	}
	jobs := redisBackupJobs(t, f.obj.Namespace)
	if len(jobs) != 1 {
		t.Fatalf("%d backup jobs on a Running cluster, want 1", len(jobs))
	}
	c := jobs[0].Spec.Template.Spec.Containers[0]
	wantArgs := []string{"save", "--addrs=r-0.r-nodes:6379,r-1.r-nodes:6379,r-2.r-nodes:6379", "--timeout=600s", "--max-backups=5",
		"--to=s3://backups/prod/r", "--aws-secret=s3-creds", "--s3-endpoint=http://s3.example:8333", "--s3-force-path-style"}
	if !slices.Equal(c.Args, wantArgs) || !slices.Equal(c.Command, []string{redisbackup.Tool}) || c.Image != "app-operator:test" {
		t.Errorf("backup container %s %v %v, want app-operator:test %s %v", c.Image, c.Command, c.Args, redisbackup.Tool, wantArgs)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			env[e.Name] = ref.Name + "/" + ref.Key
		}
	}
	if env[redisbackup.PasswordEnv] != "r/password" || env["AWS_ACCESS_KEY_ID"] != "s3-creds/AWS_ACCESS_KEY_ID" || env["AWS_SECRET_ACCESS_KEY"] != "s3-creds/AWS_SECRET_ACCESS_KEY" {
		t.Errorf("backup container secrets %v", env)
	}
	if info := f.obj.Status.BackupInfo; info == nil || info.BackupStatus != redisv1alpha1.BackupStatusRunning || info.BackupInterval != 60 {
		t.Fatalf("backupInfo %+v while the Job runs, want Running every 60 s", info)
	}

	taken := time.Now().UTC().Truncate(time.Second)
	endBackupJob(t, &jobs[0], backuprun.RedisResult{Report: backuprun.Report{Key: "s3://backups/prod/r_x_o4242.rdb", TakenAt: taken}, Node: "r-2", Role: "replica", Offset: 4242})
	f.mustPass()
	f.mustPass()
	info := f.obj.Status.BackupInfo
	if info.BackupStatus != redisv1alpha1.BackupStatusSucceeded || info.LastBackup != "s3://backups/prod/r_x_o4242.rdb" ||
		info.ReplicationOffset != 4242 || info.LastBackupTime == nil || !info.LastBackupTime.Time.Equal(taken) {
		t.Fatalf("backupInfo %+v after the Job stored its backup", info)
	}
	gauge := fmt.Sprintf("app_operator_backup_last_success_timestamp_seconds{kind=%q,name=%q,namespace=%q}", "RedisEnterpriseCluster", "r", f.obj.Namespace)
	if got := scrape(t, reg, "app_operator_backup_"); got[gauge] != float64(taken.Unix()) {
		t.Errorf("backup gauges %v, want %s = %d", got, gauge, taken.Unix())
	}
	if n := len(redisBackupJobs(t, f.obj.Namespace)); n != 1 {
		t.Fatalf("%d jobs before the interval passed, want 1", n)
	}

	// The interval passes: the next one fails, for good.
	f.clock.Step(2 * time.Minute)
	f.mustPass()
	jobs = redisBackupJobs(t, f.obj.Namespace)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs after the interval, want 2 (status %+v, backupInfo %+v)", len(jobs), f.obj.Status, f.obj.Status.BackupInfo)
	}
	endBackupJob(t, &jobs[1], backuprun.RedisResult{Report: backuprun.Report{Reason: "AccessDenied", Error: "the credentials of Secret s3-creds were refused"}})
	f.mustPass()
	f.mustPass()
	info = f.obj.Status.BackupInfo
	if info.BackupStatus != redisv1alpha1.BackupStatusFailed || !strings.HasPrefix(info.BackupFailureReason, "AccessDenied: ") ||
		info.LastBackup != "s3://backups/prod/r_x_o4242.rdb" {
		t.Fatalf("backupInfo %+v after a failed backup, want Failed with the reason and the last backup kept", info)
	}
	if r := f.readyReason(); f.obj.Status.State != redisv1alpha1.StateRunning || r != conditions.ReasonAvailable {
		t.Errorf("state %s, Ready reason %s after a failed backup: a backup never makes the cluster fail", f.obj.Status.State, r)
	}
	var reasons []string
	for _, e := range recorded(recorder) {
		for _, r := range []string{conditions.EventBackupStarted, conditions.EventBackupSucceeded, conditions.EventBackupFailed} {
			if strings.Contains(e, " "+r+" ") {
				reasons = append(reasons, r)
			}
		}
	}
	want := []string{conditions.EventBackupStarted, conditions.EventBackupSucceeded, conditions.EventBackupStarted, conditions.EventBackupFailed}
	if !slices.Equal(reasons, want) {
		t.Errorf("backup events %v, want %v (each end once)", reasons, want)
	}
}

// No backup starts while the cluster is not Running: here its primary
// is down and a failover waits for its window.
func TestRedisBackupWaitsForARunningCluster(t *testing.T) {
	f, _, _ := redisBackupFixture(t, redisv1alpha1.Backup{Interval: 60, BackupStorage: redisv1alpha1.BackupStorage{
		PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}})
	f.redis.Nodes[nodeAddr(0)].Silent = true
	f.redis.Nodes[nodeAddr(1)].Info.LinkUp = false
	f.redis.Nodes[nodeAddr(2)].Info.LinkUp = false
	f.mustPass()
	f.mustPass()
	if f.obj.Status.State == redisv1alpha1.StateRunning {
		t.Fatalf("state Running with the primary silent")
	}
	if jobs := redisBackupJobs(t, f.obj.Namespace); len(jobs) != 0 {
		t.Fatalf("%d backup jobs on a cluster that is not Running, want none", len(jobs))
	}
	if info := f.obj.Status.BackupInfo; info == nil || info.BackupStatus != redisv1alpha1.BackupStatusScheduled {
		t.Fatalf("backupInfo %+v, want Scheduled", info)
	}
}
