package redisenterprisecluster

import (
	"errors"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Persistent reports whether the nodes keep their data on claims
// (spec.persistentSpec.enabled), which outlive their pods.
func Persistent(spec *redisv1alpha1.RedisEnterpriseClusterSpec) bool {
	return spec.PersistentSpec != nil && spec.PersistentSpec.Enabled.True()
}

// Hibernating reports whether the cluster is to sleep: spec.hibernate is
// true and the nodes keep their data on claims (without them, the
// hibernation is refused: see RefuseHibernation).
func Hibernating(spec *redisv1alpha1.RedisEnterpriseClusterSpec) bool {
	return spec.Hibernate && Persistent(spec)
}

// errHibernateWithoutPersistence refuses a hibernation that would lose
// every write.
var errHibernateWithoutPersistence = errors.New("spec.hibernate is refused: spec.persistentSpec.enabled is not true, so every node keeps its data in an emptyDir, lost with its pod; " +
	"turn persistence on (a rolling change) before hibernating, or remove spec.hibernate")

// RefuseHibernation returns why spec.hibernate cannot be honoured: the
// nodes keep no data beyond their pods. The API refuses spec.hibernate
// without spec.persistentSpec; enabled, a string or a bool, is beyond its
// rules, and is checked here.
func RefuseHibernation(spec *redisv1alpha1.RedisEnterpriseClusterSpec) error {
	if spec.Hibernate && !Persistent(spec) {
		return errHibernateWithoutPersistence
	}
	return nil
}
