package redis

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/app-operator/app-operator/internal/clustermetrics"
	"github.com/app-operator/app-operator/internal/redisnode"
)

// nodeMetrics exports what each Redis node said in the INFO of the last
// pass that looked at it: the pass's look is the only poller, and a
// scrape reads what it kept, labelled with the cluster and the node.
type nodeMetrics struct {
	mu sync.Mutex
	// last is, by cluster, what its nodes said.
	last map[client.ObjectKey][]nodeSample
}

// nodeSample is what one node said, or that it did not answer.
type nodeSample struct {
	Name     string
	Answered bool
	Primary  bool
	Usage    redisnode.Usage
	// Keys is how many keys the node holds, in every database.
	Keys int64
	// LagSeconds is, for a replica its primary lists, how long ago the
	// primary last heard from it (its REPLCONF ACK); -1 when unknown.
	LagSeconds float64
}

// The metrics, each labelled namespace, name and node.
var (
	nodeLabels = append(clustermetrics.ClusterLabels[:len(clustermetrics.ClusterLabels):len(clustermetrics.ClusterLabels)], "node")
	nodeMetric = func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("app_operator_redis_node_"+name, help, nodeLabels, nil)
	}
	nodeUp        = nodeMetric("up", "1 when the node answered the operator's last look (INFO), 0 when it did not.")
	nodePrimary   = nodeMetric("primary", "1 when the node says it is a primary, 0 when a replica.")
	nodeUsed      = nodeMetric("memory_used_bytes", "Memory Redis allocated (used_memory).")
	nodeMax       = nodeMetric("memory_max_bytes", "The node's maxmemory; 0 when it has no limit.")
	nodeClients   = nodeMetric("connected_clients", "Clients connected to the node (connected_clients).")
	nodeKeys      = nodeMetric("keys", "Keys the node holds, in every database (the keys= of INFO keyspace).")
	nodeCommands  = nodeMetric("commands_processed_total", "Commands the node processed since Redis started (total_commands_processed).")
	nodeLagSecs   = nodeMetric("replication_lag_seconds", "For a replica, seconds since its primary last heard it acknowledge the stream (the lag of the primary's INFO).")
	nodeLastSave  = nodeMetric("last_save_timestamp_seconds", "When the node's last RDB save succeeded (rdb_last_save_time), in seconds since the epoch.")
	nodeSaveFail  = nodeMetric("last_save_failed", "1 when the node's last background RDB save failed (rdb_last_bgsave_status:err).")
	nodeAOF       = nodeMetric("aof_enabled", "1 when the node writes an append-only file.")
	nodeAOFFailed = nodeMetric("aof_last_write_failed", "1 when the node's last append-only file write failed (aof_last_write_status:err).")
)

// newNodeMetrics returns the node metrics, registered with reg
// (controller-runtime's registry when nil); when reg already holds them (a
// second manager in one process), those.
func newNodeMetrics(reg prometheus.Registerer) *nodeMetrics {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &nodeMetrics{last: map[client.ObjectKey][]nodeSample{}}
	if err := reg.Register(m); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*nodeMetrics); ok {
				return existing
			}
		}
		panic(err)
	}
	return m
}

// record keeps what the nodes of the cluster at key said.
func (m *nodeMetrics) record(key client.ObjectKey, nodes []nodeSample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last[key] = nodes
}

// forget drops the cluster at key.
func (m *nodeMetrics) forget(key client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, key)
}

// Describe implements prometheus.Collector.
func (m *nodeMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeUp, nodePrimary, nodeUsed, nodeMax, nodeClients, nodeKeys, nodeCommands, nodeLagSecs, nodeLastSave, nodeSaveFail, nodeAOF, nodeAOFFailed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: what the last look saw. A node
// that did not answer has only its up metric, at 0.
func (m *nodeMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, nodes := range m.last {
		for _, n := range nodes {
			labels := []string{key.Namespace, key.Name, n.Name}
			gauge := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
			}
			gauge(nodeUp, clustermetrics.Bool(n.Answered))
			if !n.Answered {
				continue
			}
			u := n.Usage
			gauge(nodePrimary, clustermetrics.Bool(n.Primary))
			gauge(nodeUsed, float64(u.UsedMemory))
			gauge(nodeMax, float64(u.MaxMemory))
			gauge(nodeClients, float64(u.Clients))
			gauge(nodeKeys, float64(n.Keys))
			ch <- prometheus.MustNewConstMetric(nodeCommands, prometheus.CounterValue, float64(u.Commands), labels...)
			if n.LagSeconds >= 0 {
				gauge(nodeLagSecs, n.LagSeconds)
			}
			if !u.LastSave.IsZero() {
				gauge(nodeLastSave, float64(u.LastSave.Unix()))
			}
			gauge(nodeSaveFail, clustermetrics.Bool(u.SaveFailed))
			gauge(nodeAOF, clustermetrics.Bool(u.AOF))
			gauge(nodeAOFFailed, clustermetrics.Bool(u.AOFWriteFailed))
		}
	}
}
