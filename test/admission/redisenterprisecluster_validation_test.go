package admission

import (
	"context"
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// s3Backup is a valid spec.backup to S3.
var s3Backup = map[string]any{"interval": int64(3600), "s3": map[string]any{
	"awsSecretName": "s3-creds", "bucketName": "backups", "subdir": "redis", "endpoint": "http://s3.example:8333", "forcePathStyle": true}}

// with returns a copy of m with key set to value.
func with(m map[string]any, key string, value any) map[string]any {
	out := maps.Clone(m)
	out[key] = value
	return out
}

// TestRedisEnterpriseClusterAdmission checks that the sample applies as
// written and that bad input is refused with a message naming the field.
func TestRedisEnterpriseClusterAdmission(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	set := func(value any, path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
				t.Fatal(err)
			}
		}
	}
	setBackup := func(backup map[string]any) func(*unstructured.Unstructured) { return set(backup, "spec", "backup") }
	tests := []struct {
		name   string
		mutate func(*unstructured.Unstructured)
		// wantErr is a fragment of the message; empty means accepted.
		wantErr string
	}{
		{"should accept the sample as written", func(*unstructured.Unstructured) {}, ""},
		{"should accept persistence enabled as a bool", set(true, "spec", "persistentSpec", "enabled"), ""},
		{"should accept persistence disabled as the string 'false'", set("false", "spec", "persistentSpec", "enabled"), ""},
		{"should accept five nodes", set(int64(5), "spec", "nodes"), ""},
		{"should accept a quantity without a space", set("4Gi", "spec", "redisEnterpriseNodeResources", "limits", "memory"), ""},
		{"should accept an integer quantity", set(int64(1), "spec", "redisEnterpriseNodeResources", "limits", "cpu"), ""},
		{"should reject an even number of nodes", set(int64(4), "spec", "nodes"), "spec.nodes"},
		{"should reject one node", set(int64(1), "spec", "nodes"), "spec.nodes"},
		{"should reject more nodes than the most", set(int64(11), "spec", "nodes"), "spec.nodes"},
		{"should reject persistence enabled as 'yes'", set("yes", "spec", "persistentSpec", "enabled"), "spec.persistentSpec.enabled"},
		{"should reject a negative memory limit", set("-4Gi", "spec", "redisEnterpriseNodeResources", "limits", "memory"), "spec.redisEnterpriseNodeResources.limits.memory"},
		{"should reject a negative cpu request", set("-400m", "spec", "redisEnterpriseNodeResources", "requests", "cpu"), "spec.redisEnterpriseNodeResources.requests.cpu"},
		{"should reject a negative integer memory request", set(int64(-1), "spec", "redisEnterpriseNodeResources", "requests", "memory"), "spec.redisEnterpriseNodeResources.requests[memory]"},
		{"should reject a memory limit that is no quantity", set("4 GB of RAM", "spec", "redisEnterpriseNodeResources", "limits", "memory"), "spec.redisEnterpriseNodeResources.limits.memory"},
		{"should reject an unknown ui Service type", set("ExternalName", "spec", "uiServiceType"), "spec.uiServiceType"},
		{"should reject a username with a space", set("admin acme", "spec", "username"), "spec.username"},
		{"should reject an unknown pull policy", set("Sometimes", "spec", "redisEnterpriseImageSpec", "imagePullPolicy"), "spec.redisEnterpriseImageSpec.imagePullPolicy"},
		{"should reject a tag with a space", set("5.4 0", "spec", "redisEnterpriseImageSpec", "versionTag"), "spec.redisEnterpriseImageSpec.versionTag"},
		{"should reject a storage class that is no name", set("GP 2", "spec", "persistentSpec", "storageClassName"), "spec.persistentSpec.storageClassName"},
		{"should reject a zero volume size", set("0", "spec", "persistentSpec", "volumeSize"), "spec.persistentSpec.volumeSize"},
		{"should accept a backup to S3", setBackup(s3Backup), ""},
		{"should accept a backup to a claim", setBackup(map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups", "subdir": "redis/prod"}}), ""},
		{"should accept a restore from S3", set(map[string]any{"backup": "prod", "s3": s3Backup["s3"]}, "spec", "restore"), ""},
		{"should reject a backup interval of zero", setBackup(with(s3Backup, "interval", int64(0))), "spec.backup.interval"},
		{"should reject a backup interval under a minute", setBackup(with(s3Backup, "interval", int64(30))), "spec.backup.interval"},
		{"should reject a bucket name S3 refuses", setBackup(map[string]any{"s3": map[string]any{"awsSecretName": "s3", "bucketName": "My_Bucket"}}), "spec.backup.s3.bucketName"},
		{"should reject a backup with no storage", setBackup(map[string]any{"interval": int64(3600)}), "exactly one of spec.backup.s3 and spec.backup.persistentVolumeClaim"},
		{"should reject a backup to S3 and a claim", setBackup(with(s3Backup, "persistentVolumeClaim", map[string]any{"claimName": "backups"})),
			"exactly one of spec.backup.s3 and spec.backup.persistentVolumeClaim"},
		{"should reject an S3 backup without its Secret", setBackup(map[string]any{"s3": map[string]any{"bucketName": "backups"}}), "spec.backup.s3.awsSecretName"},
		{"should reject a subdir that leaves the claim", setBackup(map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "b", "subdir": "a/../.."}}), "subdir"},
		{"should reject an endpoint that is no URL", setBackup(with(s3Backup, "s3", map[string]any{"awsSecretName": "s3", "bucketName": "backups", "endpoint": "minio:9000"})), "spec.backup.s3.endpoint"},
		{"should reject a restore without a backup name", set(map[string]any{"s3": s3Backup["s3"]}, "spec", "restore"), "spec.restore.backup"},
		{"should accept hibernation with persistence, as the sample has it", set(true, "spec", "hibernate"), ""},
		{"should reject hibernation without spec.persistentSpec", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "persistentSpec")
			set(true, "spec", "hibernate")(u)
		}, "spec.hibernate needs spec.persistentSpec.enabled"},
		{"should accept live and restart parameters", set(map[string]any{"maxmemory-policy": "allkeys-lru", "timeout": "300", "notify-keyspace-events": "",
			"databases": "32"}, "spec", "redisConfig"), ""},
		{"should reject a password set in redisConfig", set(map[string]any{"requirepass": "x"}, "spec", "redisConfig"), "spec.redisConfig.requirepass: the operator sets this parameter itself"},
		{"should reject the port set in redisConfig", set(map[string]any{"timeout": "1", "port": "7000"}, "spec", "redisConfig"), "spec.redisConfig.port: the operator sets"},
		{"should reject replicaof set in redisConfig", set(map[string]any{"replicaof": "a 1"}, "spec", "redisConfig"), "spec.redisConfig.replicaof: the operator sets"},
		{"should reject masterauth set in redisConfig", set(map[string]any{"masterauth": "x"}, "spec", "redisConfig"), "spec.redisConfig.masterauth: the operator sets"},
		{"should reject dir set in redisConfig", set(map[string]any{"dir": "/tmp"}, "spec", "redisConfig"), "spec.redisConfig.dir: the operator sets"},
		{"should reject appendonly set in redisConfig", set(map[string]any{"appendonly": "no"}, "spec", "redisConfig"), "spec.redisConfig.appendonly: the operator sets"},
		{"should reject bind set in redisConfig", set(map[string]any{"bind": "127.0.0.1"}, "spec", "redisConfig"), "spec.redisConfig.bind: the operator sets"},
		{"should reject protected-mode set in redisConfig", set(map[string]any{"protected-mode": "yes"}, "spec", "redisConfig"), "spec.redisConfig.protected-mode: the operator sets"},
		{"should reject a tls parameter in redisConfig", set(map[string]any{"tls-port": "6380"}, "spec", "redisConfig"), "spec.redisConfig.tls-port: the operator sets"},
		{"should reject rename-command in redisConfig", set(map[string]any{"rename-command": "CONFIG x"}, "spec", "redisConfig"), "spec.redisConfig.rename-command: the operator sets"},
		{"should reject an unknown parameter in redisConfig", set(map[string]any{"no-such-parameter": "1"}, "spec", "redisConfig"),
			"spec.redisConfig.no-such-parameter: not a parameter the operator can set"},
		{"should reject a value with a line break", set(map[string]any{"timeout": "1\nreplicaof x 1"}, "spec", "redisConfig"), "spec.redisConfig.timeout"},
		{"should reject a value with a quote", set(map[string]any{"notify-keyspace-events": "\"Ex"}, "spec", "redisConfig"), "spec.redisConfig.notify-keyspace-events"},
		{"should reject a name too long for its pods", func(u *unstructured.Unstructured) {
			u.SetName("redis-enterprise-with-a-name-much-too-long-for-its-pods")
		}, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := testenv.RedisSampleObject(t, ns)
			tt.mutate(u)
			testenv.ExpectAdmission(t, k8s.Create(context.Background(), u, client.DryRunAll), tt.wantErr)
		})
	}
}

// spec.restore is set only when the cluster is created, and never changes.
func TestRedisEnterpriseClusterRestoreIsSetOnlyAtCreation(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	plain := testenv.RedisSampleObject(t, ns)
	if err := k8s.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	restore := map[string]any{"backup": "prod", "s3": s3Backup["s3"]}
	if err := unstructured.SetNestedField(plain.Object, restore, "spec", "restore"); err != nil {
		t.Fatal(err)
	}
	testenv.ExpectAdmission(t, k8s.Update(ctx, plain), "spec.restore can only be set when the RedisEnterpriseCluster is created")

	restored := testenv.RedisSampleObject(t, ns)
	restored.SetName("restored")
	if err := unstructured.SetNestedField(restored.Object, restore, "spec", "restore"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(restored.Object, "other", "spec", "restore", "backup"); err != nil {
		t.Fatal(err)
	}
	testenv.ExpectAdmission(t, k8s.Update(ctx, restored), "spec.restore cannot change")
	unstructured.RemoveNestedField(restored.Object, "spec", "restore")
	testenv.ExpectAdmission(t, k8s.Update(ctx, restored), "spec.restore can only be set when the RedisEnterpriseCluster is created")
}

// spec.persistentSpec.volumeSize may grow (the claims are grown in
// place), never shrink; left out, it is 1Gi.
func TestRedisEnterpriseClusterVolumeSizeOnlyGrows(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	for _, tt := range []struct {
		name     string
		from, to any // nil: left out
		wantErr  string
	}{
		{"2Gi to 4Gi", "2Gi", "4Gi", ""},
		{"2Gi to 2048Mi", "2Gi", "2048Mi", ""},
		{"2Gi to 1Gi", "2Gi", "1Gi", "spec.persistentSpec.volumeSize cannot shrink"},
		{"2Gi to left out (1Gi)", "2Gi", nil, "spec.persistentSpec.volumeSize cannot shrink"},
		{"left out (1Gi) to 3Gi", nil, "3Gi", ""},
		{"left out (1Gi) to 512Mi", nil, "512Mi", "spec.persistentSpec.volumeSize cannot shrink"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := testenv.RedisSampleObject(t, ns)
			u.SetGenerateName("sized-")
			setSize := func(v any) {
				if v == nil {
					unstructured.RemoveNestedField(u.Object, "spec", "persistentSpec", "volumeSize")
					return
				}
				if err := unstructured.SetNestedField(u.Object, v, "spec", "persistentSpec", "volumeSize"); err != nil {
					t.Fatal(err)
				}
			}
			setSize(tt.from)
			u.SetName("")
			if err := k8s.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			setSize(tt.to)
			testenv.ExpectAdmission(t, k8s.Update(ctx, u, client.DryRunAll), tt.wantErr)
		})
	}
}
