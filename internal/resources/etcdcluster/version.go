package etcdcluster

import (
	"fmt"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Unsupported returns why nothing is built for spec, whose version is
// below etcdv1beta2.MinimumVersion; nil for any other spec. Admission
// takes such a version (the seed's sample asks for 3.2.13 and applies
// unchanged); the operator refuses it before it creates a member, rather
// than start members it cannot reach.
func Unsupported(spec *etcdv1beta2.EtcdClusterSpec) *conditions.Failure {
	v, ok := etcdv1beta2.ParseVersion(spec.Version)
	if !ok || !v.Less(etcdv1beta2.MinimumVersion) {
		return nil
	}
	return &conditions.Failure{Reason: etcdv1beta2.ReasonVersionUnsupported, Message: fmt.Sprintf(
		"spec.version %s is below %s, the first etcd version this operator manages: it reaches the members through etcd's gateway at /v3, which 3.2 serves only at /v3alpha and 3.3 at /v3beta, and adds members as learners, which came with 3.4. Nothing is created: set spec.version to %s or later",
		spec.Version, etcdv1beta2.MinimumVersion, etcdv1beta2.MinimumVersion)}
}
