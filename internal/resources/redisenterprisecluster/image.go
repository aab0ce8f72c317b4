package redisenterprisecluster

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// DefaultImage is the open-source Redis image the API defaults to,
// redis:7.0.15.
const DefaultImage = redisv1alpha1.DefaultRepository + ":" + redisv1alpha1.DefaultVersionTag

// Proprietary reports whether repository names Redis Enterprise's image,
// with or without its registry (docker.io/redislabs/redis).
func Proprietary(repository string) bool {
	r := strings.TrimPrefix(strings.TrimPrefix(repository, "docker.io/"), "index.docker.io/")
	return r == redisv1alpha1.ProprietaryRepository
}

// Image returns the image the nodes of spec run, with its pull policy,
// where openSource is the operator's open-source Redis image (DefaultImage
// when empty; an installer names a mirror with --redis-image):
//   - a spec that names Redis Enterprise's image runs openSource, and
//     replaced says why (the sample's redislabs/redis: the operator gives
//     redis-server's arguments, which Redis Enterprise does not take);
//   - a spec at the default image (DefaultImage, as the API defaults it)
//     runs openSource;
//   - any other image runs as named.
func Image(spec *redisv1alpha1.RedisEnterpriseClusterSpec, openSource string) (image string, policy corev1.PullPolicy, replaced string) {
	openSource = cmp.Or(openSource, DefaultImage)
	repo, tag, policy := redisv1alpha1.DefaultRepository, redisv1alpha1.DefaultVersionTag, corev1.PullIfNotPresent
	if s := spec.RedisEnterpriseImageSpec; s != nil {
		repo = cmp.Or(s.Repository, repo)
		tag = cmp.Or(s.VersionTag, tag)
		policy = cmp.Or(s.ImagePullPolicy, policy)
	}
	switch {
	case Proprietary(repo):
		return openSource, policy, fmt.Sprintf("spec.redisEnterpriseImageSpec.repository %s is the proprietary Redis Enterprise image; running %s instead", repo, openSource)
	case repo+":"+tag == DefaultImage:
		return openSource, policy, ""
	}
	return repo + ":" + tag, policy, ""
}
