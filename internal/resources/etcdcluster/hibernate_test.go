package etcdcluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestBuildHibernated(t *testing.T) {
	members := []etcdv1beta2.EtcdMember{{Name: "e-0", ID: "1"}, {Name: "e-1", ID: "2"}, {Name: "e-2", ID: "3"}}
	for _, tt := range []struct {
		name       string
		hibernate  bool
		replicas   int32
		whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
	}{
		{"awake", false, 3, appsv1.DeletePersistentVolumeClaimRetentionPolicyType},
		{"hibernated", true, 0, appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := &etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", Hibernate: tt.hibernate}
			c := Build(resources.Owner{Name: "e", Namespace: "ns", UID: "u"}, spec, Membership{Members: members, Replicas: 3})
			sts := c.StatefulSet.Spec
			if *sts.Replicas != tt.replicas || *sts.PersistentVolumeClaimRetentionPolicy.WhenScaled != tt.whenScaled {
				t.Errorf("replicas %d, whenScaled %s; want %d, %s", *sts.Replicas, *sts.PersistentVolumeClaimRetentionPolicy.WhenScaled, tt.replicas, tt.whenScaled)
			}
			// The start-up files keep every member: they start from them
			// when the cluster wakes.
			for _, m := range members {
				if _, ok := c.ConfigMap.Data[ConfigKey(m.Name)]; !ok {
					t.Errorf("no start-up file for %s", m.Name)
				}
			}
		})
	}
}
