package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

func TestHibernationConditions(t *testing.T) {
	failure := &conditions.Failure{Reason: conditions.ReasonApplyRejected, Message: "refused"}
	for _, tt := range []struct {
		name                         string
		running                      int
		failure                      *conditions.Failure
		ready, progressing, degraded string
	}{
		{"pods stopping", 2, nil, "False Hibernating", "True Hibernating", "False AsExpected"},
		{"every pod gone", 0, nil, "True Hibernated", "False Hibernated", "False AsExpected"},
		{"a child refused", 0, failure, "False ApplyRejected", "False ApplyRejected", "True ApplyRejected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := func(kind string, conds []metav1.Condition, observed, generation int64) {
				t.Helper()
				for typ, want := range map[string]string{conditions.Ready: tt.ready, conditions.Progressing: tt.progressing, conditions.Degraded: tt.degraded} {
					c := meta.FindStatusCondition(conds, typ)
					if c == nil || string(c.Status)+" "+c.Reason != want {
						t.Errorf("%s %s: %+v, want %s", kind, typ, c, want)
					}
				}
				if (observed == generation) != (tt.failure == nil) {
					t.Errorf("%s observedGeneration %d of %d with failure %v", kind, observed, generation, tt.failure)
				}
			}
			rs := redisv1alpha1.RedisEnterpriseClusterStatus{Primary: "r-0", State: redisv1alpha1.StateRunning,
				Nodes: []redisv1alpha1.NodeStatus{{Name: "r-0", Role: redisv1alpha1.RolePrimary, Healthy: true}}}
			RedisHibernated(&rs, 2, tt.running, tt.failure, metav1.Now())
			check("redis", rs.Conditions, rs.ObservedGeneration, 2)
			if rs.State != redisv1alpha1.StateHibernated || rs.Primary != "r-0" || rs.Nodes[0].Healthy || rs.Nodes[0].Role != redisv1alpha1.RolePrimary {
				t.Errorf("redis status %+v, want Hibernated, r-0 kept the primary, its node unhealthy", rs)
			}
			es := etcdv1beta2.EtcdClusterStatus{Leader: "e-0", Members: []etcdv1beta2.EtcdMember{
				{Name: "e-0", ID: "1", Healthy: true, Leader: true, ClaimUID: "u0"}, {Name: "e-1", ID: "2", Healthy: true, ClaimUID: "u1"}}}
			EtcdHibernated(&es, 2, &etcdv1beta2.EtcdClusterSpec{Size: 2, Version: "3.6.16", Hibernate: true}, "s", tt.running, tt.failure, metav1.Now())
			check("etcd", es.Conditions, es.ObservedGeneration, 2)
			if es.Leader != "" || es.Size != 2 || es.Members[0].Healthy || es.Members[0].Leader || es.Members[1].ID != "2" || es.Members[1].ClaimUID != "u1" {
				t.Errorf("etcd status %+v, want both members kept, none healthy or leading", es)
			}
		})
	}
}
