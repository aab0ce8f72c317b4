package status

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// hibernation is the conditions of a data service whose spec.hibernate is
// true, of which running pods remain: while they stop, not Ready and
// Progressing (Hibernating); once none runs, Ready (Hibernated), since the
// resource is at its spec, as a Deployment scaled to 0 is available: a
// GitOps tool that waits for Ready after setting spec.hibernate is done
// waiting once every pod is gone. What serves nothing says so in its
// reason. A failure of the pass (a child not applied) is Degraded.
func hibernation(running int, claims string, failure *conditions.Failure) triple {
	c := newTriple()
	switch {
	case failure != nil:
		c.failed(failure)
		say(&c.progressing, metav1.ConditionFalse, failure.Reason, "No change can be made: "+failure.Message)
	case running > 0:
		c.changing(conditions.ReasonHibernating, fmt.Sprintf("spec.hibernate is true: %d pods are stopping; %s", running, claims))
	default:
		message := "spec.hibernate is true: no pod runs and nothing is served; " + claims + ". Set spec.hibernate to false to wake the cluster"
		say(&c.ready, metav1.ConditionTrue, conditions.ReasonHibernated, message)
		say(&c.progressing, metav1.ConditionFalse, conditions.ReasonHibernated, message)
	}
	return c
}

// RedisHibernated sets the status of a RedisEnterpriseCluster whose
// spec.hibernate is honoured (see hibernation), with running of its pods
// left: the state is Hibernated, status.primary stays (the election at the
// wake prefers it at an equal position) and no node is healthy.
func RedisHibernated(st *redisv1alpha1.RedisEnterpriseClusterStatus, generation int64, running int, failure *conditions.Failure, now metav1.Time) {
	st.State = redisv1alpha1.StateHibernated
	for i := range st.Nodes {
		st.Nodes[i].Healthy = false
	}
	c := hibernation(running, "every claim and the Secrets are kept, and no failover, election or backup is made until it wakes", failure)
	c.set(&st.Conditions, generation, now)
	if failure == nil {
		st.ObservedGeneration = generation
	}
}

// EtcdHibernated sets the status of an EtcdCluster whose spec.hibernate is
// true (see hibernation), with running of its pods left: the members stay
// recorded as they are in etcd's member list, none healthy, none the
// leader.
func EtcdHibernated(st *etcdv1beta2.EtcdClusterStatus, generation int64, spec *etcdv1beta2.EtcdClusterSpec, selector string, running int, failure *conditions.Failure, now metav1.Time) {
	st.Leader = ""
	for i := range st.Members {
		st.Members[i].Healthy, st.Members[i].Leader = false, false
	}
	st.Size = int32(len(st.Members))
	st.TargetVersion = spec.Version
	st.Selector = selector
	c := hibernation(running, fmt.Sprintf("the %d members stay in etcd's member list with their claims, and none is added or removed until it wakes", len(st.Members)), failure)
	c.set(&st.Conditions, generation, now)
	if failure == nil {
		st.ObservedGeneration = generation
	}
}
