package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// A scrape reads what the last look at each node saw: the figures of a
// node that answered, and only up=0 for one that did not; a replica's lag
// in seconds only when its primary lists it; nothing of a cluster
// forgotten.
func TestNodeMetricsExportWhatTheLastLookSaw(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	g := newRedisGauges(reg)
	key := client.ObjectKey{Namespace: "ns", Name: "r"}
	nodes := []redisNode{
		{plan: redisenterprisecluster.Node{Name: "r-0", Answered: true, Primary: true, Offset: 100}, lagSeconds: -1, keys: 42,
			usage: redisnode.Usage{UsedMemory: 2048, MaxMemory: 4096, Clients: 3, Commands: 1234, LastSave: time.Unix(1764417600, 0), AOF: true}},
		{plan: redisenterprisecluster.Node{Name: "r-1", Answered: true, Follows: "r-0", Offset: 90}, lagSeconds: 1, keys: 41,
			usage: redisnode.Usage{UsedMemory: 1024, Clients: 1, Commands: 99, SaveFailed: true, AOF: true, AOFWriteFailed: true}},
		{plan: redisenterprisecluster.Node{Name: "r-2"}, lagSeconds: -1},
	}
	g.record(key, redisSampleOf("r-0", nodes))
	want := `
# HELP app_operator_redis_node_aof_enabled 1 when the node writes an append-only file.
# TYPE app_operator_redis_node_aof_enabled gauge
app_operator_redis_node_aof_enabled{name="r",namespace="ns",node="r-0"} 1
app_operator_redis_node_aof_enabled{name="r",namespace="ns",node="r-1"} 1
# HELP app_operator_redis_node_aof_last_write_failed 1 when the node's last append-only file write failed (aof_last_write_status:err).
# TYPE app_operator_redis_node_aof_last_write_failed gauge
app_operator_redis_node_aof_last_write_failed{name="r",namespace="ns",node="r-0"} 0
app_operator_redis_node_aof_last_write_failed{name="r",namespace="ns",node="r-1"} 1
# HELP app_operator_redis_node_commands_processed_total Commands the node processed since Redis started (total_commands_processed).
# TYPE app_operator_redis_node_commands_processed_total counter
app_operator_redis_node_commands_processed_total{name="r",namespace="ns",node="r-0"} 1234
app_operator_redis_node_commands_processed_total{name="r",namespace="ns",node="r-1"} 99
# HELP app_operator_redis_node_connected_clients Clients connected to the node (connected_clients).
# TYPE app_operator_redis_node_connected_clients gauge
app_operator_redis_node_connected_clients{name="r",namespace="ns",node="r-0"} 3
app_operator_redis_node_connected_clients{name="r",namespace="ns",node="r-1"} 1
# HELP app_operator_redis_node_keys Keys the node holds, in every database (the keys= of INFO keyspace).
# TYPE app_operator_redis_node_keys gauge
app_operator_redis_node_keys{name="r",namespace="ns",node="r-0"} 42
app_operator_redis_node_keys{name="r",namespace="ns",node="r-1"} 41
# HELP app_operator_redis_node_last_save_failed 1 when the node's last background RDB save failed (rdb_last_bgsave_status:err).
# TYPE app_operator_redis_node_last_save_failed gauge
app_operator_redis_node_last_save_failed{name="r",namespace="ns",node="r-0"} 0
app_operator_redis_node_last_save_failed{name="r",namespace="ns",node="r-1"} 1
# HELP app_operator_redis_node_last_save_timestamp_seconds When the node's last RDB save succeeded (rdb_last_save_time), in seconds since the epoch.
# TYPE app_operator_redis_node_last_save_timestamp_seconds gauge
app_operator_redis_node_last_save_timestamp_seconds{name="r",namespace="ns",node="r-0"} 1.7644176e+09
# HELP app_operator_redis_node_memory_max_bytes The node's maxmemory; 0 when it has no limit.
# TYPE app_operator_redis_node_memory_max_bytes gauge
app_operator_redis_node_memory_max_bytes{name="r",namespace="ns",node="r-0"} 4096
app_operator_redis_node_memory_max_bytes{name="r",namespace="ns",node="r-1"} 0
# HELP app_operator_redis_node_memory_used_bytes Memory Redis allocated (used_memory).
# TYPE app_operator_redis_node_memory_used_bytes gauge
app_operator_redis_node_memory_used_bytes{name="r",namespace="ns",node="r-0"} 2048
app_operator_redis_node_memory_used_bytes{name="r",namespace="ns",node="r-1"} 1024
# HELP app_operator_redis_node_primary 1 when the node says it is a primary, 0 when a replica.
# TYPE app_operator_redis_node_primary gauge
app_operator_redis_node_primary{name="r",namespace="ns",node="r-0"} 1
app_operator_redis_node_primary{name="r",namespace="ns",node="r-1"} 0
# HELP app_operator_redis_node_replication_lag_seconds For a replica, seconds since its primary last heard it acknowledge the stream (the lag of the primary's INFO).
# TYPE app_operator_redis_node_replication_lag_seconds gauge
app_operator_redis_node_replication_lag_seconds{name="r",namespace="ns",node="r-1"} 1
# HELP app_operator_redis_node_up 1 when the node answered the operator's last look (INFO), 0 when it did not.
# TYPE app_operator_redis_node_up gauge
app_operator_redis_node_up{name="r",namespace="ns",node="r-0"} 1
app_operator_redis_node_up{name="r",namespace="ns",node="r-1"} 1
app_operator_redis_node_up{name="r",namespace="ns",node="r-2"} 0
`
	names := []string{"app_operator_redis_node_aof_enabled", "app_operator_redis_node_aof_last_write_failed", "app_operator_redis_node_commands_processed_total",
		"app_operator_redis_node_connected_clients", "app_operator_redis_node_keys", "app_operator_redis_node_last_save_failed", "app_operator_redis_node_last_save_timestamp_seconds",
		"app_operator_redis_node_memory_max_bytes", "app_operator_redis_node_memory_used_bytes", "app_operator_redis_node_primary",
		"app_operator_redis_node_replication_lag_seconds", "app_operator_redis_node_up"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg, names...); err != nil || len(problems) > 0 {
		t.Errorf("the metrics break Prometheus's conventions: %v %v", problems, err)
	}
	g.forget(key)
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 0 {
		t.Errorf("%d node metrics (%v) after the cluster was forgotten, want none", n, err)
	}
}
