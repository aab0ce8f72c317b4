package redisbackup_test

import (
	"slices"
	"testing"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

var owner = resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "cache", Namespace: "prod", UID: "u"}

func TestJobArgumentsAndMounts(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		backup     redisv1alpha1.Backup
		tlsSecret  string
		wantArgs   []string
		wantMounts []string
	}{
		{
			name: "S3 with an endpoint, path style and a count kept",
			backup: redisv1alpha1.Backup{MaxBackups: 7, TimeoutSeconds: 120, BackupStorage: redisv1alpha1.BackupStorage{S3: &redisv1alpha1.S3Storage{
				AWSSecretName: "creds", BucketName: "b", Subdir: "x/y", Endpoint: "http://s3:8333", ForcePathStyle: true}}},
			wantArgs: []string{"save", "--addrs=a:6379,b:6379", "--timeout=120s", "--max-backups=7", "--to=s3://b/x/y/cache", "--aws-secret=creds",
				"--s3-endpoint=http://s3:8333", "--s3-force-path-style"},
			wantMounts: []string{"/tmp"},
		},
		{
			name:       "a claim's root",
			backup:     redisv1alpha1.Backup{BackupStorage: redisv1alpha1.BackupStorage{PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}},
			wantArgs:   []string{"save", "--addrs=a:6379,b:6379", "--timeout=600s", "--to=/backup/cache"},
			wantMounts: []string{"/tmp", "/backup"},
		},
		{
			name:      "nodes that serve TLS",
			backup:    redisv1alpha1.Backup{BackupStorage: redisv1alpha1.BackupStorage{PersistentVolumeClaim: &redisv1alpha1.ClaimStorage{ClaimName: "backups"}}},
			tlsSecret: "cache-tls",
			wantArgs: []string{"save", "--addrs=a:6379,b:6379", "--timeout=600s", "--to=/backup/cache",
				"--tls-dir=/etc/redis-snapshot/tls", "--tls-server-name=cache.prod.svc"},
			wantMounts: []string{"/tmp", "/backup", "/etc/redis-snapshot/tls"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := redisbackup.JobInput{Name: redisbackup.JobName("cache", at), Scheduled: at,
				Image: "op:1", Nodes: []string{"a:6379", "b:6379"}, Secret: "cache", PasswordKey: "password"}
			if tt.tlsSecret != "" {
				in.TLSSecret, in.ServerName = tt.tlsSecret, "cache.prod.svc"
			}
			job, err := redisbackup.Job(owner, &tt.backup, in)
			if err != nil {
				t.Fatal(err)
			}
			if *job.Name != "cache-b-1795694400" || job.Annotations[redisbackup.ScheduledAnnotation] != "2026-11-26T12:00:00Z" {
				t.Errorf("job %s %v", *job.Name, job.Annotations)
			}
			c := job.Spec.Template.Spec.Containers[0]
			if !slices.Equal(c.Args, tt.wantArgs) {
				t.Errorf("args %v, want %v", c.Args, tt.wantArgs)
			}
			var mounts []string
			for _, m := range c.VolumeMounts {
				mounts = append(mounts, *m.MountPath)
			}
			if !slices.Equal(mounts, tt.wantMounts) {
				t.Errorf("mounts %v, want %v", mounts, tt.wantMounts)
			}
			if *job.Spec.BackoffLimit != 2 || job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values[0] != redisbackup.ExitPermanent {
				t.Errorf("retries %d, failing at once on %v", *job.Spec.BackoffLimit, job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values)
			}
			if got := redisbackup.Scheduled(job.Annotations, time.Time{}); !got.Equal(at) {
				t.Errorf("Scheduled %s, want %s", got, at)
			}
		})
	}
}

func TestRestoreContainerRestoresOnlyTheFirstNode(t *testing.T) {
	r := &redisv1alpha1.RestoreSource{Backup: "cache_20261126-120000_o42.rdb", BackupStorage: redisv1alpha1.BackupStorage{
		S3: &redisv1alpha1.S3Storage{AWSSecretName: "creds", BucketName: "b", Subdir: "x"}}}
	c, volumes := redisbackup.RestoreContainer(r, redisbackup.RestoreInput{Image: "op:1", Pod: "cache-0", DataVolume: "data", DataDir: "/data"})
	want := []string{"restore", "--only-pod=cache-0", "--data-dir=/data", "--from=s3://b/x/cache_20261126-120000_o42.rdb", "--aws-secret=creds"}
	if !slices.Equal(c.Args, want) || *c.Name != redisbackup.RestoreContainerName || len(volumes) != 0 {
		t.Errorf("restore container %s %v with %d volumes, want %v and none", *c.Name, c.Args, len(volumes), want)
	}
}
