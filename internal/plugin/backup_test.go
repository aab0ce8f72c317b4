package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/plugin"
)

// backup asks a RedisEnterpriseCluster with spec.backup for a backup by
// a new request ID each time; one without spec.backup is refused, as the
// operator would refuse it. An EtcdCluster gets a one-shot EtcdBackup
// stored where its newest EtcdBackup stores; without one, the refusal
// names the kind.
func TestBackupAsksEachKindItsOwnWay(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	r := newRedis(t, ns, "cache")
	if _, err := plugin.Backup(ctx, k8s, r, time.Unix(100, 0)); err == nil || !strings.Contains(err.Error(), "spec.backup") {
		t.Errorf("a backup of a cluster without spec.backup: %v, want it refused naming spec.backup", err)
	}
	r.Spec.Backup = &redisv1alpha1.Backup{Interval: 3600, BackupStorage: redisv1alpha1.BackupStorage{
		PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}}
	if err := k8s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{100, 200} {
		id, err := plugin.Backup(ctx, k8s, r, time.Unix(at, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			t.Fatal(err)
		}
		if got := r.Annotations[redisv1alpha1.BackupNowAnnotation]; got != id || id == "" {
			t.Errorf("annotation %q, request %q", got, id)
		}
	}
	if r.Annotations[redisv1alpha1.BackupNowAnnotation] != "200" {
		t.Errorf("the second request is %q, want a new one", r.Annotations[redisv1alpha1.BackupNowAnnotation])
	}

	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.5.21"}}
	if err := k8s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.Backup(ctx, k8s, e, time.Unix(300, 0)); err == nil || !strings.Contains(err.Error(), "EtcdBackup") {
		t.Errorf("a backup of an EtcdCluster without an EtcdBackup: %v, want it refused naming the EtcdBackup kind", err)
	}
	scheduled := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: etcdv1beta2.EtcdBackupSpec{ClusterName: "example", StorageType: etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
			BackupPolicy:   &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 86400, MaxBackups: 7},
			BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "etcd/example"}}}}
	if err := k8s.Create(ctx, scheduled); err != nil {
		t.Fatal(err)
	}
	name, err := plugin.Backup(ctx, k8s, e, time.Unix(300, 0))
	if err != nil {
		t.Fatal(err)
	}
	once := &etcdv1beta2.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(once), once); err != nil {
		t.Fatalf("the one-shot EtcdBackup %s: %v", name, err)
	}
	if name != "example-now-300" || once.Spec.ClusterName != "example" || once.Spec.BackupPolicy.BackupIntervalInSecond != 0 || once.Spec.BackupPolicy.MaxBackups != 7 ||
		once.Spec.PersistentVolumeClaim == nil || once.Spec.PersistentVolumeClaim.Path != "etcd/example" {
		t.Errorf("EtcdBackup %s: %+v, want one snapshot of example stored as nightly stores them", name, once.Spec)
	}
	if _, err := plugin.Backup(ctx, k8s, &corev1.ConfigMap{}, time.Now()); err == nil {
		t.Error("a backup of a ConfigMap was asked for")
	}
}

// The outcome of a Redis backup asked for is that of the backup whose
// start the status first gives beside the request: not the one before,
// and not a later one.
func TestBackupWatchFollowsTheRequestsBackup(t *testing.T) {
	at := func(s int64) *metav1.Time { t := metav1.Unix(s, 0); return &t }
	spec := redisv1alpha1.RedisEnterpriseClusterSpec{Backup: &redisv1alpha1.Backup{}}
	cluster := func(spec redisv1alpha1.RedisEnterpriseClusterSpec, info *redisv1alpha1.BackupInfo) *redisv1alpha1.RedisEnterpriseCluster {
		return &redisv1alpha1.RedisEnterpriseCluster{Spec: spec, Status: redisv1alpha1.RedisEnterpriseClusterStatus{BackupInfo: info}}
	}
	type look struct {
		info       *redisv1alpha1.BackupInfo
		done, fail bool
		says       string
	}
	tests := []struct {
		name  string
		spec  redisv1alpha1.RedisEnterpriseClusterSpec
		looks []look
	}{
		{"should wait for the request, then report what its backup stored", spec, []look{
			{&redisv1alpha1.BackupInfo{LastRequest: "old", BackupStatus: "Succeeded", LastScheduleTime: at(10), LastBackup: "k-old"}, false, false, "waiting for the operator"},
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Running", LastScheduleTime: at(20), LastBackup: "k-old"}, false, false, "runs"},
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Succeeded", LastScheduleTime: at(20), LastBackup: "k1", ReplicationOffset: 42}, true, false, "stored k1 (replication offset 42)"},
		}},
		{"should report a failure with its reason", spec, []look{
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Running", LastScheduleTime: at(20)}, false, false, "runs"},
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Failed", LastScheduleTime: at(20), BackupFailureReason: "AccessDenied: no"}, true, true, "failed: AccessDenied: no"},
		}},
		{"should not take a later backup's outcome for the request's", spec, []look{
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Running", LastScheduleTime: at(20)}, false, false, "runs"},
			{&redisv1alpha1.BackupInfo{LastRequest: "b1", BackupStatus: "Succeeded", LastScheduleTime: at(90)}, true, true, "a later backup"},
		}},
		{"should report a refusal without spec.backup", redisv1alpha1.RedisEnterpriseClusterSpec{}, []look{
			{nil, false, false, "waiting for the operator"},
			{&redisv1alpha1.BackupInfo{LastRequest: "b1"}, true, true, "refused"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &plugin.BackupWatch{Request: "b1"}
			for i, l := range tt.looks {
				done, failed, message := w.Outcome(cluster(tt.spec, l.info))
				if done != l.done || failed != l.fail || !strings.Contains(message, l.says) {
					t.Errorf("look %d: done %v, failed %v, %q; want %v, %v, saying %q", i, done, failed, message, l.done, l.fail, l.says)
				}
			}
		})
	}
	etcd := &plugin.BackupWatch{Request: "example-now-1"}
	for _, tt := range []struct {
		status     etcdv1beta2.EtcdBackupStatus
		done, fail bool
	}{{etcdv1beta2.EtcdBackupStatus{}, false, false}, {etcdv1beta2.EtcdBackupStatus{Succeeded: true, LastBackup: "k"}, true, false}, {etcdv1beta2.EtcdBackupStatus{Reason: "AccessDenied"}, true, true}} {
		if done, failed, message := etcd.Outcome(&etcdv1beta2.EtcdBackup{Status: tt.status}); done != tt.done || failed != tt.fail {
			t.Errorf("EtcdBackup status %+v: done %v, failed %v (%s); want %v, %v", tt.status, done, failed, message, tt.done, tt.fail)
		}
	}
}
