package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// The labels of every cluster gauge: the custom resource's namespace and
// name; the replica's name for a gauge of each replica.
const (
	labelNamespace = "namespace"
	labelName      = "name"
	labelReplica   = "replica"
)

var clusterLabels = []string{labelNamespace, labelName}

// labelsOf are the labels of the gauges of the cluster at key.
func labelsOf(key client.ObjectKey) prometheus.Labels {
	return prometheus.Labels{labelNamespace: key.Namespace, labelName: key.Name}
}

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
		return registerGauge(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "app_operator_etcdcluster_" + name, Help: help}, clusterLabels))
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
	l := labelsOf(key)
	g.members.With(l).Set(float64(s.Members))
	g.healthy.With(l).Set(float64(s.Healthy))
	g.learners.With(l).Set(float64(s.Learners))
	g.leader.With(l).Set(boolGauge(s.Leader))
	g.quorumMargin.With(l).Set(float64(s.QuorumMargin))
}

// forget drops the gauges of the cluster at key.
func (g *etcdGauges) forget(key client.ObjectKey) {
	forgetCluster(key, g.members, g.healthy, g.learners, g.leader, g.quorumMargin)
}

// redisGauges are the gauges of every RedisEnterpriseCluster, set from
// each pass's look at its nodes (see redisSampleOf) and dropped when the
// resource is deleted.
type redisGauges struct {
	nodes, healthy, primary, replicaLag *prometheus.GaugeVec
}

// newRedisGauges returns the RedisEnterpriseCluster gauges, registered
// with reg (controller-runtime's registry when nil).
func newRedisGauges(reg prometheus.Registerer) *redisGauges {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return registerGauge(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "app_operator_redisenterprisecluster_" + name, Help: help},
			append(clusterLabels[:len(clusterLabels):len(clusterLabels)], labels...)))
	}
	return &redisGauges{
		nodes:   g("nodes", "Redis nodes of the RedisEnterpriseCluster the operator looks at."),
		healthy: g("nodes_healthy", "Nodes of the RedisEnterpriseCluster that are healthy: the primary answering as one, a replica in sync with it."),
		primary: g("has_primary", "1 when the RedisEnterpriseCluster's recorded primary is ready and answers as a primary, 0 otherwise."),
		replicaLag: g("replica_lag_bytes", "How many bytes of the primary's replication stream each replica that follows it "+
			"has not received yet (the primary's offset minus the replica's).", labelReplica),
	}
}

// redisSample is the value of each RedisEnterpriseCluster gauge.
type redisSample struct {
	Nodes, Healthy int
	Primary        bool
	// Lag is, by replica, how far behind the primary's offset it is; only
	// the replicas that answer and follow a primary that answers.
	Lag map[string]int64
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
	}
	return s
}

// record sets the gauges of the cluster at key. A replica that no longer
// reports a lag (it stopped answering, or is gone) loses its gauge.
func (g *redisGauges) record(key client.ObjectKey, s redisSample) {
	l := labelsOf(key)
	g.nodes.With(l).Set(float64(s.Nodes))
	g.healthy.With(l).Set(float64(s.Healthy))
	g.primary.With(l).Set(boolGauge(s.Primary))
	g.replicaLag.DeletePartialMatch(l)
	for replica, lag := range s.Lag {
		l := labelsOf(key)
		l[labelReplica] = replica
		g.replicaLag.With(l).Set(float64(lag))
	}
}

// forget drops the gauges of the cluster at key.
func (g *redisGauges) forget(key client.ObjectKey) {
	forgetCluster(key, g.nodes, g.healthy, g.primary, g.replicaLag)
}

// registerGauge registers v with reg (controller-runtime's registry when
// nil) and returns it; when reg already holds a collector of the same
// name and labels (a second manager in one process), that one.
func registerGauge(reg prometheus.Registerer, v *prometheus.GaugeVec) *prometheus.GaugeVec {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	if err := reg.Register(v); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.GaugeVec); ok {
				return existing
			}
		}
		// The names and labels are constants: any other error is a bug.
		panic(err)
	}
	return v
}

func forgetCluster(key client.ObjectKey, vecs ...*prometheus.GaugeVec) {
	for _, v := range vecs {
		v.DeletePartialMatch(labelsOf(key))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// backupGauges hold, for each resource of one kind that takes backups
// (an EtcdBackup, a RedisEnterpriseCluster with spec.backup), when the
// last backup it stored was taken: the alert on backups that stop
// succeeding reads its age. Labelled kind, namespace and name.
type backupGauges struct {
	kind        string
	lastSuccess *prometheus.GaugeVec
}

func newBackupGauges(reg prometheus.Registerer, kind string) *backupGauges {
	return &backupGauges{kind: kind, lastSuccess: registerGauge(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "app_operator_backup_last_success_timestamp_seconds",
		Help: "The Unix time the last backup a resource stored was taken (absent until one is).",
	}, []string{"kind", labelNamespace, labelName}))}
}

// record sets the gauge of the resource key to taken, when a backup was
// taken.
func (g *backupGauges) record(key client.ObjectKey, taken *metav1.Time) {
	if taken == nil {
		return
	}
	g.lastSuccess.WithLabelValues(g.kind, key.Namespace, key.Name).Set(float64(taken.Unix()))
}

func (g *backupGauges) forget(key client.ObjectKey) {
	labels := labelsOf(key)
	labels["kind"] = g.kind
	g.lastSuccess.DeletePartialMatch(labels)
}
