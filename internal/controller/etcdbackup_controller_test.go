package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdbackup"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

const (
	etcdBackupSample  = "etcd/etcd_v1beta2_etcdbackup.yaml"
	etcdRestoreSample = "etcd/etcd_v1beta2_etcdrestore.yaml"
)

// TestEtcdBackupAndRestoreAdmission checks that the samples apply, and
// that bad inputs are refused with the field named.
func TestEtcdBackupAndRestoreAdmission(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	backups := []struct {
		name    string
		mutate  func(*etcdv1beta2.EtcdBackup)
		wantErr string
	}{
		{"the sample", func(*etcdv1beta2.EtcdBackup) {}, ""},
		{"a bucket name S3 refuses", func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3.Path = "Bad_Bucket/etcd" }, "spec.s3.path"},
		{"a path without a prefix", func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3.Path = "bucket" }, "spec.s3.path"},
		{"no credentials Secret", func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3.AWSSecret = "" }, "spec.s3.awsSecret"},
		{"an endpoint without a scheme", func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3.Endpoint = "s3.local:8333" }, "spec.s3.endpoint"},
		{"an interval of zero", func(b *etcdv1beta2.EtcdBackup) { b.Spec.BackupPolicy.BackupIntervalInSecond = -1 }, "spec.backupPolicy.backupIntervalInSecond"},
		{"no backups kept", func(b *etcdv1beta2.EtcdBackup) { b.Spec.BackupPolicy.MaxBackups = -2 }, "spec.backupPolicy.maxBackups"},
		{"a timeout of zero", func(b *etcdv1beta2.EtcdBackup) { b.Spec.BackupPolicy.TimeoutInSecond = -5 }, "spec.backupPolicy.timeoutInSecond"},
		{"a cluster and endpoints", func(b *etcdv1beta2.EtcdBackup) { b.Spec.EtcdEndpoints = []string{"http://10.0.0.1:2379"} }, "spec.clusterName and spec.etcdEndpoints"},
		{"neither a cluster nor endpoints", func(b *etcdv1beta2.EtcdBackup) { b.Spec.ClusterName = "" }, "spec.clusterName and spec.etcdEndpoints"},
		{"S3 without spec.s3", func(b *etcdv1beta2.EtcdBackup) { b.Spec.S3 = nil }, "spec.s3"},
		{"an unknown storage type", func(b *etcdv1beta2.EtcdBackup) { b.Spec.StorageType = "ABS" }, "spec.storageType"},
		{"a claim path that leaves the claim", func(b *etcdv1beta2.EtcdBackup) {
			b.Spec.StorageType, b.Spec.S3 = etcdv1beta2.BackupStorageTypePersistentVolumeClaim, nil
			b.Spec.PersistentVolumeClaim = &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "a/../../etc"}
		}, "spec.persistentVolumeClaim.path"},
		{"a claim", func(b *etcdv1beta2.EtcdBackup) {
			b.Spec.StorageType, b.Spec.S3 = etcdv1beta2.BackupStorageTypePersistentVolumeClaim, nil
			b.Spec.PersistentVolumeClaim = &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "example/etcd"}
		}, ""},
	}
	for _, tt := range backups {
		t.Run("backup: "+tt.name, func(t *testing.T) {
			b := &etcdv1beta2.EtcdBackup{}
			testenv.LoadSample(t, etcdBackupSample, b, ns)
			tt.mutate(b)
			testenv.ExpectAdmission(t, k8s.Create(ctx, b, client.DryRunAll), tt.wantErr)
		})
	}
	// An interval written as 0 is refused, not taken as "once" (a typed
	// client leaves a zero out; kubectl apply does not).
	t.Run("backup: an interval written as 0", func(t *testing.T) {
		b := &etcdv1beta2.EtcdBackup{}
		testenv.LoadSample(t, etcdBackupSample, b, ns)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := unstructured.SetNestedField(u.Object, int64(0), "spec", "backupPolicy", "backupIntervalInSecond"); err != nil {
			t.Fatal(err)
		}
		testenv.ExpectAdmission(t, k8s.Create(ctx, u, client.DryRunAll), "spec.backupPolicy.backupIntervalInSecond")
	})

	restores := []struct {
		name    string
		mutate  func(*etcdv1beta2.EtcdRestore)
		wantErr string
	}{
		{"the sample", func(*etcdv1beta2.EtcdRestore) {}, ""},
		{"a restore source in the cluster spec", func(r *etcdv1beta2.EtcdRestore) {
			r.Spec.ClusterSpec.Restore = &r.Spec.SnapshotSource
		}, "spec.clusterSpec.restore"},
		{"no cluster name", func(r *etcdv1beta2.EtcdRestore) { r.Spec.EtcdCluster.Name = "" }, "spec.etcdCluster.name"},
		{"PersistentVolumeClaim without a claim", func(r *etcdv1beta2.EtcdRestore) {
			r.Spec.BackupStorageType = etcdv1beta2.BackupStorageTypePersistentVolumeClaim
		}, "backupStorageType PersistentVolumeClaim needs persistentVolumeClaim"},
		{"a bad cluster size", func(r *etcdv1beta2.EtcdRestore) { r.Spec.ClusterSpec.Size = 10 }, "spec.clusterSpec.size"},
	}
	for _, tt := range restores {
		t.Run("restore: "+tt.name, func(t *testing.T) {
			r := &etcdv1beta2.EtcdRestore{}
			testenv.LoadSample(t, etcdRestoreSample, r, ns)
			tt.mutate(r)
			testenv.ExpectAdmission(t, k8s.Create(ctx, r, client.DryRunAll), tt.wantErr)
		})
	}
	t.Run("restore: the spec cannot change", func(t *testing.T) {
		r := &etcdv1beta2.EtcdRestore{}
		testenv.LoadSample(t, etcdRestoreSample, r, ns)
		if err := k8s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Spec.EtcdCluster.Name = "another"
		testenv.ExpectAdmission(t, k8s.Update(ctx, r, client.DryRunAll), "spec cannot change")
	})
	t.Run("cluster: spec.restore can only be set at creation", func(t *testing.T) {
		e := &etcdv1beta2.EtcdCluster{}
		testenv.LoadSample(t, testenv.EtcdSample, e, ns)
		e.Name = "restore-later"
		if err := k8s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		e.Spec.Restore = &etcdv1beta2.SnapshotSource{BackupStorageType: etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
			BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "x"}}}
		testenv.ExpectAdmission(t, k8s.Update(ctx, e, client.DryRunAll), "spec.restore")
	})
}

// snapshotImage is the snapshot tool's image the tests run the operator
// with.
const snapshotImage = "registry.example/app-operator:test"

// backupJobs returns the Jobs of the EtcdBackup name, oldest first.
func backupJobs(t *testing.T, ns, name string) []batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(etcdbackup.Selector(name))); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// waitForBackupJobs waits until the EtcdBackup name has n Jobs and returns
// them, oldest first.
func waitForBackupJobs(t *testing.T, ns, name string, n int) []batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		jobs = backupJobs(t, ns, name)
		return len(jobs) >= n, fmt.Sprintf("%d jobs, want %d", len(jobs), n)
	})
	return jobs
}

// endBackupJob plays the Job controller and the kubelet: the Job's pod
// ends with the snapshot tool's result as its termination message, and
// the Job completes (or fails).
func endBackupJob(t *testing.T, job *batchv1.Job, result interface{ Failed() bool }) {
	t.Helper()
	ctx := context.Background()
	msg, err := json.Marshal(result)
	if err != nil {
		t.Fatal(err)
	}
	exit := int32(0)
	if result.Failed() {
		exit = etcdbackup.ExitPermanent
	}
	// No controller makes the namespace's default ServiceAccount here.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: "default"}}
	if err := k8s.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	labels := resources.Merge(job.Spec.Template.Labels, map[string]string{batchv1.JobNameLabel: job.Name})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod", Labels: labels},
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: etcdbackup.ContainerName, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: string(msg), FinishedAt: now}},
	}}}
	if exit != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(now.Add(-time.Second))
	job.Status.StartTime = &start
	if exit == 0 {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, Message: "Container snapshot exited with 2", LastTransitionTime: now},
		}
	}
	if err := k8s.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
}

// waitForEvent waits until an event of reason regards obj.
func waitForEvent(t *testing.T, obj client.Object, reason string) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(obj.GetNamespace())); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.UID == obj.GetUID() {
				if e.Reason == reason {
					return true, ""
				}
				seen = append(seen, e.Reason)
			}
		}
		return false, fmt.Sprintf("events %v, want %s", seen, reason)
	})
}

// TestEtcdBackupRunsAJobPerIntervalAndRecordsWhatEachStored runs a
// periodic backup to a claim: each Job runs the tool with the cluster's
// endpoints and the location; the status records the snapshot a Job
// stored, says why one failed (keeping the last snapshot that was
// stored), and the old Jobs are pruned.
func TestEtcdBackupRunsAJobPerIntervalAndRecordsWhatEachStored(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	reg := prometheus.NewRegistry()
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage, Metrics: reg}})
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "periodic"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379"},
			StorageType:   etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
			BackupPolicy:  &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 2},
			BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{
				ClaimName: "backups", Path: "main/etcd"}},
		},
	}
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	first := waitForBackupJobs(t, ns, b.Name, 1)[0]
	if ref := metav1.GetControllerOf(&first); ref == nil || ref.UID != b.UID {
		t.Errorf("job %s controlled by %v, want the EtcdBackup", first.Name, ref)
	}
	c := first.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"save", "--endpoints=http://10.0.0.1:2379,http://10.0.0.2:2379", "--to=/backup/main/etcd", "--max-backups=2", "--timeout=600s"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %q", c.Args, want)
		}
	}
	if c.Image != snapshotImage || len(c.Command) != 1 || c.Command[0] != etcdbackup.Tool {
		t.Errorf("container runs %s %v, want %s %s", c.Image, c.Command, snapshotImage, etcdbackup.Tool)
	}
	if !slices.ContainsFunc(first.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "backups"
	}) {
		t.Errorf("volumes %+v lack the claim backups", first.Spec.Template.Spec.Volumes)
	}
	waitForCondition(t, b, "Progressing", metav1.ConditionTrue, etcdv1beta2.ReasonBackupRunning)

	taken := time.Now().UTC().Truncate(time.Second)
	endBackupJob(t, &first, backuprun.EtcdResult{Report: backuprun.Report{Key: "/backup/main/etcd_v42_x", TakenAt: taken, Size: 20480}, Revision: 42, EtcdVersion: "3.6.16"})
	waitForCondition(t, b, "Ready", metav1.ConditionTrue, "")
	if b.Status.EtcdRevision != 42 || b.Status.LastBackup != "/backup/main/etcd_v42_x" || b.Status.EtcdVersion != "3.6.16" || !b.Status.Succeeded ||
		b.Status.LastSuccessDate == nil || !b.Status.LastSuccessDate.Time.Equal(taken) {
		t.Errorf("status %+v, want the snapshot of revision 42 taken at %s", b.Status, taken)
	}
	waitForEvent(t, b, conditions.EventBackupSucceeded)
	gauge := fmt.Sprintf("app_operator_backup_last_success_timestamp_seconds{kind=%q,name=%q,namespace=%q}", "EtcdBackup", b.Name, ns)
	if got := scrape(t, reg, "app_operator_backup_"); got[gauge] != float64(taken.Unix()) {
		t.Errorf("backup gauges %v, want %s = %d", got, gauge, taken.Unix())
	}

	// The next one, an interval later, fails: the status says why, and
	// keeps the snapshot stored before.
	second := waitForBackupJobs(t, ns, b.Name, 2)[1]
	if gap := second.CreationTimestamp.Sub(first.CreationTimestamp.Time); gap < time.Second {
		t.Errorf("the second job came %s after the first, want the 2 s interval", gap)
	}
	endBackupJob(t, &second, backuprun.EtcdResult{Report: backuprun.Report{Reason: "TargetFull", Error: "no space left on claim backups"}})
	cond := waitForCondition(t, b, "Ready", metav1.ConditionFalse, "TargetFull")
	if !strings.Contains(cond.Message, "no space left on claim backups") || !strings.Contains(b.Status.Reason, "no space left") || b.Status.Succeeded {
		t.Errorf("condition %q, status %+v: want the tool's words", cond.Message, b.Status)
	}
	if b.Status.EtcdRevision != 42 || b.Status.LastBackup != "/backup/main/etcd_v42_x" {
		t.Errorf("status %+v lost the last snapshot stored", b.Status)
	}
	waitForCondition(t, b, "Degraded", metav1.ConditionTrue, "TargetFull")
	waitForEvent(t, b, conditions.EventBackupFailed)

	// Every Job ends as it comes: no more than backupJobsKept (3) ended
	// ones stay.
	seen := map[string]bool{}
	testenv.Eventually(t, 40*time.Second, func() (bool, string) {
		for _, j := range backupJobs(t, ns, b.Name) {
			seen[j.Name] = true
			if len(j.Status.Conditions) == 0 && j.DeletionTimestamp == nil {
				endBackupJob(t, &j, backuprun.EtcdResult{Report: backuprun.Report{Key: "k" + j.Name, TakenAt: time.Now().UTC()}, Revision: int64(40 + len(seen))})
			}
		}
		return len(seen) >= 6, fmt.Sprintf("%d jobs seen, want 6", len(seen))
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		ended := 0
		for _, j := range backupJobs(t, ns, b.Name) {
			if len(j.Status.Conditions) > 0 && j.DeletionTimestamp == nil {
				ended++
			}
		}
		return ended <= 3, fmt.Sprintf("%d ended jobs, want at most 3", ended)
	})
}

// TestEtcdBackupTakenOnceIsNotTakenAgain: without an interval, one Job.
func TestEtcdBackupTakenOnceIsNotTakenAgain(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage}})
	b := &etcdv1beta2.EtcdBackup{}
	testenv.LoadSample(t, etcdBackupSample, b, ns)
	b.Spec.ClusterName, b.Spec.EtcdEndpoints, b.Spec.BackupPolicy = "", []string{"http://10.0.0.1:2379"}, nil
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	job := waitForBackupJobs(t, ns, b.Name, 1)[0]
	args := job.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--to=s3://etcd-backups/example", "--s3-endpoint=http://s3.example.internal:8333", "--s3-force-path-style", "--aws-credentials-file=/etc/etcd-backup/aws/credentials", "--aws-secret=etcd-backup-credentials"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	endBackupJob(t, &job, backuprun.EtcdResult{Report: backuprun.Report{Key: "etcd-backups/example_v7_x", TakenAt: time.Now().UTC()}, Revision: 7})
	waitForCondition(t, b, "Ready", metav1.ConditionTrue, "")
	time.Sleep(3 * time.Second)
	if jobs := backupJobs(t, ns, b.Name); len(jobs) != 1 {
		t.Errorf("%d jobs after a backup taken once, want 1", len(jobs))
	}
}

// TestEtcdBackupOfAMissingClusterSaysSoAndStartsNothing names the field.
func TestEtcdBackupOfAMissingClusterSaysSoAndStartsNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	b := &etcdv1beta2.EtcdBackup{}
	testenv.LoadSample(t, etcdBackupSample, b, ns)
	b.Spec.ClusterName = "missing"
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	cond := waitForCondition(t, b, "Degraded", metav1.ConditionTrue, etcdv1beta2.ReasonClusterNotFound)
	if !strings.Contains(cond.Message, "spec.clusterName") {
		t.Errorf("message %q does not name spec.clusterName", cond.Message)
	}
	if jobs := backupJobs(t, ns, b.Name); len(jobs) != 0 {
		t.Errorf("%d jobs for a missing cluster, want none", len(jobs))
	}
}

// TestEtcdRestoreCreatesTheClusterFromItsSnapshotAndNeverTouchesAnother:
// the restore creates the EtcdCluster it names with spec.restore, whose
// StatefulSet restores the first member before it starts; a restore that
// names an existing cluster fails and leaves it as it is.
func TestEtcdRestoreCreatesTheClusterFromItsSnapshotAndNeverTouchesAnother(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage}})

	existing := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, testenv.EtcdSample, existing, ns)
	existing.Name = "taken"
	if err := k8s.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}
	refused := &etcdv1beta2.EtcdRestore{}
	testenv.LoadSample(t, etcdRestoreSample, refused, ns)
	refused.Name, refused.Spec.EtcdCluster.Name = "onto-taken", existing.Name
	if err := k8s.Create(ctx, refused); err != nil {
		t.Fatal(err)
	}
	cond := waitForCondition(t, refused, "Degraded", metav1.ConditionTrue, "ClusterExists")
	if !strings.Contains(cond.Message, "spec.etcdCluster.name") {
		t.Errorf("message %q does not name spec.etcdCluster.name", cond.Message)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(existing), existing); err != nil {
		t.Fatal(err)
	}
	if existing.Spec.Restore != nil || existing.Annotations[etcdv1beta2.RestoredByAnnotation] != "" {
		t.Errorf("the existing cluster was changed: %+v %v", existing.Spec, existing.Annotations)
	}

	r := &etcdv1beta2.EtcdRestore{}
	testenv.LoadSample(t, etcdRestoreSample, r, ns)
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	restored := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.Spec.EtcdCluster.Name}}
	waitForObject(t, restored)
	if restored.Spec.Restore == nil || restored.Spec.Restore.S3 == nil || restored.Spec.Restore.S3.Path != r.Spec.S3.Path ||
		restored.Spec.Size != r.Spec.ClusterSpec.Size || restored.Annotations[etcdv1beta2.RestoredByAnnotation] != r.Name {
		t.Errorf("restored cluster %+v %v, want the restore's spec and source", restored.Spec, restored.Annotations)
	}
	waitForCondition(t, r, "Progressing", metav1.ConditionTrue, "Restoring")
	waitForEvent(t, r, etcdv1beta2.EventRestoreStarted)

	sts := waitForStatefulSet(t, ns, restored.Name)
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != etcdcluster.RestoreContainerName || inits[0].Image != snapshotImage {
		t.Fatalf("init containers %+v, want the restore from %s", inits, snapshotImage)
	}
	for _, want := range []string{"restore", "--from=s3://etcd-backups/example", "--only-pod=example-restored-0", "--data-dir=/var/run/etcd/data", "--name=example-restored-0"} {
		if !slices.Contains(inits[0].Args, want) {
			t.Errorf("restore args %q lack %q", inits[0].Args, want)
		}
	}
}

// TestEtcdRestoreReportsTheSnapshotItsClusterRestored: the restore reads
// the report of its cluster's first member's restore: the tool's failure
// reason (TimelinesInterleaved) and words become its Degraded condition,
// and the snapshot the tool chose becomes status.backup.
func TestEtcdRestoreReportsTheSnapshotItsClusterRestored(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage}})

	r := &etcdv1beta2.EtcdRestore{}
	testenv.LoadSample(t, etcdRestoreSample, r, ns)
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	sts := waitForStatefulSet(t, ns, r.Spec.EtcdCluster.Name)
	// No controller makes the namespace's default ServiceAccount here.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	if err := k8s.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: etcdcluster.MemberName(sts.Name, 0), Labels: sts.Spec.Template.Labels},
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	// The StatefulSet controller would mount the member's claim.
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: etcdcluster.DataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The restore fails and waits to be run again.
	failed := backuprun.EtcdResult{Report: backuprun.Report{Reason: conditions.ReasonTimelinesInterleaved,
		Error: "the backups under s3://etcd-backups/example come from clusters a1 and b2, which wrote to it at the same time, so which is the newest cannot be told: name an exact snapshot instead"}}
	setRestoreStatus(t, pod, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		&corev1.ContainerStateTerminated{ExitCode: etcdbackup.ExitPermanent, Message: mustJSON(t, failed)})
	cond := waitForCondition(t, r, "Degraded", metav1.ConditionTrue, conditions.ReasonTimelinesInterleaved)
	for _, want := range []string{r.Spec.EtcdCluster.Name, "s3://etcd-backups/example", "a1", "b2", "name an exact snapshot"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Degraded message %q does not say %q", cond.Message, want)
		}
	}

	// Run again (an exact snapshot named), it restores.
	key := "s3://etcd-backups/example_cb2_v7_20260301-040000"
	done := backuprun.EtcdResult{Report: backuprun.Report{Key: key, Size: 20512}, Revision: 7}
	setRestoreStatus(t, pod, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: mustJSON(t, done)}}, nil)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, r)
		return r.Status.Backup == key, fmt.Sprintf("status.backup %q, want %q", r.Status.Backup, key)
	})
	waitForCondition(t, r, "Progressing", metav1.ConditionTrue, "Restoring")

	// A restart of the pod, after which the tool finds the member and
	// reports no snapshot, keeps the one restored.
	setRestoreStatus(t, pod, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0,
		Message: mustJSON(t, backuprun.EtcdResult{Report: backuprun.Report{AlreadyRestored: true}})}}, nil)
	time.Sleep(2 * time.Second)
	if get(t, r); r.Status.Backup != key {
		t.Errorf("status.backup %q after the pod restarted, want %q kept", r.Status.Backup, key)
	}
}

// setRestoreStatus sets the state of the restore init container of pod.
func setRestoreStatus(t *testing.T, pod *corev1.Pod, state corev1.ContainerState, last *corev1.ContainerStateTerminated) {
	t.Helper()
	get(t, pod)
	if state.Terminated != nil {
		state.Terminated.FinishedAt = metav1.Now()
	}
	status := corev1.ContainerStatus{Name: etcdcluster.RestoreContainerName, Image: snapshotImage, State: state}
	if last != nil {
		last.FinishedAt = metav1.Now()
		status.LastTerminationState.Terminated = last
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{status}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitForStatefulSet waits until the StatefulSet name exists.
func waitForStatefulSet(t *testing.T, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	waitForObject(t, sts)
	return sts
}
