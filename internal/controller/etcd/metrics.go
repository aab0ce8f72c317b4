package etcd

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"

	"github.com/app-operator/app-operator/internal/clustermetrics"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// etcdGauges are the gauges of every EtcdCluster, set from what each pass
// looked at (the members etcd reports and their health; see etcdSample)
// and dropped when the resource is deleted.
type etcdGauges struct {
	members, healthy, learners, leader, quorumMargin *prometheus.GaugeVec
}

// newEtcdGauges returns the EtcdCluster gauges, registered with reg
// (controller-runtime's registry, which the manager's metrics endpoint
// serves, when nil).
func newEtcdGauges(reg prometheus.Registerer) *etcdGauges {
	g := func(name, help string) *prometheus.GaugeVec {
		return clustermetrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "app_operator_etcdcluster_" + name, Help: help}, clustermetrics.ClusterLabels))
	}
	return &etcdGauges{
		members:  g("members", "Members in the EtcdCluster's etcd member list, learners included (0 when no member answers)."),
		healthy:  g("members_healthy", "Members of the EtcdCluster that answer their status call and know a leader."),
		learners: g("learners", "Learners (non-voting members) in the EtcdCluster's member list."),
		leader:   g("has_leader", "1 when a member of the EtcdCluster is its leader, 0 otherwise."),
		quorumMargin: g("quorum_margin", "How many more voting members the EtcdCluster can lose before it loses its quorum: "+
			"its healthy voters minus its quorum; negative when the quorum is lost."),
	}
}

// etcdSample is the value of each EtcdCluster gauge.
type etcdSample struct {
	Members, Healthy, Learners, QuorumMargin int
	Leader                                   bool
}

// etcdSampleOf is what the gauges of a cluster of spec read from obs, a
// pass's look at its members. Without an answer from any member, the
// quorum is that of spec.size.
func etcdSampleOf(spec *etcdv1beta2.EtcdClusterSpec, obs etcdcluster.Observed) etcdSample {
	var s etcdSample
	voters, healthyVoters := 0, 0
	for _, m := range obs.Members {
		s.Members++
		if m.Healthy {
			s.Healthy++
		}
		if m.Leader {
			s.Leader = true
		}
		if m.Learner {
			s.Learners++
			continue
		}
		voters++
		if m.Healthy {
			healthyVoters++
		}
	}
	if !obs.Reachable || voters == 0 {
		voters = int(spec.Size)
	}
	s.QuorumMargin = healthyVoters - (voters/2 + 1)
	return s
}

// record sets the gauges of the cluster at key.
func (g *etcdGauges) record(key client.ObjectKey, s etcdSample) {
	l := clustermetrics.LabelsOf(key)
	g.members.With(l).Set(float64(s.Members))
	g.healthy.With(l).Set(float64(s.Healthy))
	g.learners.With(l).Set(float64(s.Learners))
	g.leader.With(l).Set(clustermetrics.Bool(s.Leader))
	g.quorumMargin.With(l).Set(float64(s.QuorumMargin))
}

// forget drops the gauges of the cluster at key.
func (g *etcdGauges) forget(key client.ObjectKey) {
	clustermetrics.Forget(key, g.members, g.healthy, g.learners, g.leader, g.quorumMargin)
}
