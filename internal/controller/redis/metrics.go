package redis

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/clustermetrics"
)

// redisGauges are the gauges of every RedisEnterpriseCluster, set from
// each pass's look at its nodes (see redisSampleOf) and dropped when the
// resource is deleted.
type redisGauges struct {
	nodes, healthy, primary, replicaLag *prometheus.GaugeVec
	// perNode are the metrics of each node (see nodeMetrics).
	perNode *nodeMetrics
}

// newRedisGauges returns the RedisEnterpriseCluster gauges, registered
// with reg (controller-runtime's registry when nil).
func newRedisGauges(reg prometheus.Registerer) *redisGauges {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return clustermetrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "app_operator_redisenterprisecluster_" + name, Help: help},
			append(clustermetrics.ClusterLabels[:len(clustermetrics.ClusterLabels):len(clustermetrics.ClusterLabels)], labels...)))
	}
	return &redisGauges{
		nodes:   g("nodes", "Redis nodes of the RedisEnterpriseCluster the operator looks at."),
		healthy: g("nodes_healthy", "Nodes of the RedisEnterpriseCluster that are healthy: the primary answering as one, a replica in sync with it."),
		primary: g("has_primary", "1 when the RedisEnterpriseCluster's recorded primary is ready and answers as a primary, 0 otherwise."),
		replicaLag: g("replica_lag_bytes", "How many bytes of the primary's replication stream each replica that follows it "+
			"has not received yet (the primary's offset minus the replica's).", clustermetrics.LabelReplica),
		perNode: newNodeMetrics(reg),
	}
}

// redisSample is the value of each RedisEnterpriseCluster gauge.
type redisSample struct {
	Nodes, Healthy int
	Primary        bool
	// Lag is, by replica, how far behind the primary's offset it is; only
	// the replicas that answer and follow a primary that answers.
	Lag map[string]int64
	// PerNode is what each node said.
	PerNode []nodeSample
}

// redisSampleOf is what the gauges of a cluster whose recorded primary is
// primary read from its nodes as a pass saw them, before its step: the
// health of each node is the one status.nodes reports.
func redisSampleOf(primary string, nodes []redisNode) redisSample {
	s := redisSample{Nodes: len(nodes), Lag: map[string]int64{}}
	for _, n := range nodeStatuses(nodes, primary) {
		if !n.Healthy {
			continue
		}
		s.Healthy++
		if n.Name == primary {
			s.Primary = true
		}
	}
	offsets := map[string]int64{}
	for _, n := range nodes {
		if n.plan.Answered && n.plan.Primary {
			offsets[n.plan.Name] = n.plan.Offset
		}
	}
	for _, n := range nodes {
		if off, ok := offsets[n.plan.Follows]; ok && n.plan.Answered && !n.plan.Primary {
			s.Lag[n.plan.Name] = max(off-n.plan.Offset, 0)
		}
		s.PerNode = append(s.PerNode, nodeSample{Name: n.plan.Name, Answered: n.plan.Answered, Primary: n.plan.Primary, Usage: n.usage, Keys: n.keys, LagSeconds: n.lagSeconds})
	}
	return s
}

// record sets the gauges of the cluster at key. A replica that no longer
// reports a lag (it stopped answering, or is gone) loses its gauge.
func (g *redisGauges) record(key client.ObjectKey, s redisSample) {
	l := clustermetrics.LabelsOf(key)
	g.nodes.With(l).Set(float64(s.Nodes))
	g.healthy.With(l).Set(float64(s.Healthy))
	g.primary.With(l).Set(clustermetrics.Bool(s.Primary))
	g.perNode.record(key, s.PerNode)
	g.replicaLag.DeletePartialMatch(l)
	for replica, lag := range s.Lag {
		l := clustermetrics.LabelsOf(key)
		l[clustermetrics.LabelReplica] = replica
		g.replicaLag.With(l).Set(float64(lag))
	}
}

// forget drops the gauges of the cluster at key.
func (g *redisGauges) forget(key client.ObjectKey) {
	clustermetrics.Forget(key, g.nodes, g.healthy, g.primary, g.replicaLag)
	g.perNode.forget(key)
}
