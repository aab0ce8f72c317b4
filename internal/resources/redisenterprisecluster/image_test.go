package redisenterprisecluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

func TestImage(t *testing.T) {
	spec := func(repo, tag string) *redisv1alpha1.RedisEnterpriseClusterSpec {
		return &redisv1alpha1.RedisEnterpriseClusterSpec{RedisEnterpriseImageSpec: &redisv1alpha1.ImageSpec{Repository: repo, VersionTag: tag}}
	}
	const mirror = "registry.example/mirror/redis:7.0.15"
	for _, tt := range []struct {
		name       string
		spec       *redisv1alpha1.RedisEnterpriseClusterSpec
		openSource string
		image      string
		replaced   string
	}{
		{"left out", &redisv1alpha1.RedisEnterpriseClusterSpec{}, "", "redis:7.0.15", ""},
		{"the default, as the API writes it", spec("redis", "7.0.15"), "", "redis:7.0.15", ""},
		{"the default, with a mirror", spec("redis", "7.0.15"), mirror, mirror, ""},
		{"another open-source tag", spec("redis", "7.0.15-bookworm"), mirror, "redis:7.0.15-bookworm", ""},
		{"an image of one's own", spec("registry.example/redis", "7.2"), "", "registry.example/redis:7.2", ""},
		{"the sample's Redis Enterprise", spec("redislabs/redis", "5.4.0-19"), "", "redis:7.0.15",
			"spec.redisEnterpriseImageSpec.repository redislabs/redis is the proprietary Redis Enterprise image; running redis:7.0.15 instead"},
		{"Redis Enterprise with its registry, and a mirror", spec("docker.io/redislabs/redis", "6.0.6-39"), mirror, mirror,
			"spec.redisEnterpriseImageSpec.repository docker.io/redislabs/redis is the proprietary Redis Enterprise image; running " + mirror + " instead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			image, policy, replaced := Image(tt.spec, tt.openSource)
			if image != tt.image || replaced != tt.replaced || policy != corev1.PullIfNotPresent {
				t.Errorf("Image = %q, %s, %q; want %q, IfNotPresent, %q", image, policy, replaced, tt.image, tt.replaced)
			}
		})
	}
}
