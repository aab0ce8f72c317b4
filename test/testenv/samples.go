package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/test/cluster"
)

// The samples of config/samples that tests load by name.
const (
	MemcachedSample = "cache_v1alpha1_memcached.yaml"
	MSDSample       = "custom_v1_microservicedeploy.yaml"
	RedisSample     = "app_v1alpha1_redisenterprisecluster.yaml"
	// EtcdSample is the seed's EtcdCluster sample, which must apply unchanged.
	EtcdSample = "etcd/etcd_v1beta2_etcdcluster.yaml"
)

// LoadSample reads the sample resource config/samples/<file>, unchanged,
// into obj, in namespace ns.
func LoadSample(t testing.TB, file string, obj client.Object, ns string) {
	t.Helper()
	if err := yaml.Unmarshal(readSample(t, file), obj); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	obj.SetNamespace(ns)
}

// NewMemcached is the seed sample, unchanged, in namespace ns.
func NewMemcached(t testing.TB, ns string) *cachev1alpha1.Memcached {
	t.Helper()
	m := &cachev1alpha1.Memcached{}
	LoadSample(t, MemcachedSample, m, ns)
	return m
}

// RedisSampleObject returns the RedisEnterpriseCluster sample as the YAML
// writes it (a string 'true', a quantity with a space), in namespace ns.
func RedisSampleObject(t testing.TB, ns string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(readSample(t, RedisSample), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	return u
}

// readSample returns the contents of config/samples/<file>.
func readSample(t testing.TB, file string) []byte {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
