package redisenterprisecluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestHibernation(t *testing.T) {
	on := &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: true, AsString: true}}
	off := &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: false}}
	for _, tt := range []struct {
		name                string
		spec                redisv1alpha1.RedisEnterpriseClusterSpec
		refused, hibernates bool
		replicas            int32
	}{
		{"awake", redisv1alpha1.RedisEnterpriseClusterSpec{PersistentSpec: on}, false, false, 3},
		{"hibernated with persistence", redisv1alpha1.RedisEnterpriseClusterSpec{PersistentSpec: on, Hibernate: true}, false, true, 0},
		{"hibernated with persistence off", redisv1alpha1.RedisEnterpriseClusterSpec{PersistentSpec: off, Hibernate: true}, true, false, 0},
		{"hibernated without persistentSpec", redisv1alpha1.RedisEnterpriseClusterSpec{Hibernate: true}, true, false, 0},
		{"awake without persistence", redisv1alpha1.RedisEnterpriseClusterSpec{}, false, false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hibernating(&tt.spec); got != tt.hibernates {
				t.Errorf("Hibernating %v, want %v", got, tt.hibernates)
			}
			c, err := Build(resources.Owner{Name: "r", Namespace: "ns", UID: "u"}, &tt.spec, Input{Primary: "r-0"})
			if (err != nil) != tt.refused {
				t.Fatalf("Build error %v, want refused %v", err, tt.refused)
			}
			if err != nil {
				return
			}
			if got := *c.StatefulSet.Spec.Replicas; got != tt.replicas {
				t.Errorf("replicas %d, want %d", got, tt.replicas)
			}
			// The role files stay: the nodes read them when they start.
			for i := range 3 {
				if _, ok := c.ConfigMap.Data[RoleFile(PodName("r", i))]; !ok {
					t.Errorf("no role file for node %d", i)
				}
			}
			if p := c.StatefulSet.Spec.PersistentVolumeClaimRetentionPolicy; tt.spec.PersistentSpec != nil && (p == nil || *p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType) {
				t.Errorf("retention %+v, want the claims retained when scaled", p)
			}
		})
	}
}
