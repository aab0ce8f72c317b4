package v1alpha1

// RedisConfig are redis.conf parameters of every node, by name: the
// parameters of LiveParameters are applied to the running nodes (CONFIG
// SET) with no restart, and those of RestartParameters by replacing the
// pods one at a time, as a change of image is. The parameters the operator
// sets itself (OwnedParameters, and every tls-* one) are refused, as is
// any parameter of neither list.
// +kubebuilder:validation:MaxProperties=32
// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tls-') && !(k in ['bind', 'protected-mode', 'port', 'replicaof', 'slaveof', 'requirepass', 'masterauth', 'masteruser', 'user', 'aclfile', 'dir', 'dbfilename', 'appendonly', 'appendfsync', 'appendfilename', 'appenddirname', 'save', 'shutdown-on-sigterm', 'shutdown-on-sigint', 'repl-diskless-sync', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'replica-serve-stale-data', 'slave-serve-stale-data', 'replica-read-only', 'slave-read-only', 'replica-priority', 'slave-priority', 'replica-announce-ip', 'replica-announce-port', 'include', 'rename-command', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'cluster-enabled', 'supervised', 'enable-debug-command', 'enable-protected-configs', 'enable-module-command', 'loadmodule']))",messageExpression="'spec.redisConfig.' + self.filter(k, k.startsWith('tls-') || k in ['bind', 'protected-mode', 'port', 'replicaof', 'slaveof', 'requirepass', 'masterauth', 'masteruser', 'user', 'aclfile', 'dir', 'dbfilename', 'appendonly', 'appendfsync', 'appendfilename', 'appenddirname', 'save', 'shutdown-on-sigterm', 'shutdown-on-sigint', 'repl-diskless-sync', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'replica-serve-stale-data', 'slave-serve-stale-data', 'replica-read-only', 'slave-read-only', 'replica-priority', 'slave-priority', 'replica-announce-ip', 'replica-announce-port', 'include', 'rename-command', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'cluster-enabled', 'supervised', 'enable-debug-command', 'enable-protected-configs', 'enable-module-command', 'loadmodule'])[0] + ': the operator sets this parameter itself; it cannot be set here'"
// +kubebuilder:validation:XValidation:rule="self.all(k, k.startsWith('tls-') || k in ['bind', 'protected-mode', 'port', 'replicaof', 'slaveof', 'requirepass', 'masterauth', 'masteruser', 'user', 'aclfile', 'dir', 'dbfilename', 'appendonly', 'appendfsync', 'appendfilename', 'appenddirname', 'save', 'shutdown-on-sigterm', 'shutdown-on-sigint', 'repl-diskless-sync', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'replica-serve-stale-data', 'slave-serve-stale-data', 'replica-read-only', 'slave-read-only', 'replica-priority', 'slave-priority', 'replica-announce-ip', 'replica-announce-port', 'include', 'rename-command', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'cluster-enabled', 'supervised', 'enable-debug-command', 'enable-protected-configs', 'enable-module-command', 'loadmodule'] || k in ['maxmemory', 'maxmemory-policy', 'maxmemory-samples', 'maxclients', 'timeout', 'tcp-keepalive', 'hz', 'dynamic-hz', 'slowlog-log-slower-than', 'slowlog-max-len', 'latency-monitor-threshold', 'notify-keyspace-events', 'lazyfree-lazy-eviction', 'lazyfree-lazy-expire', 'lazyfree-lazy-server-del', 'activedefrag', 'hash-max-ziplist-entries', 'hash-max-ziplist-value', 'list-max-ziplist-size', 'set-max-intset-entries', 'zset-max-ziplist-entries', 'zset-max-ziplist-value', 'stream-node-max-bytes', 'stream-node-max-entries'] || k in ['databases', 'io-threads', 'io-threads-do-reads', 'tcp-backlog'])",messageExpression="'spec.redisConfig.' + self.filter(k, !(k.startsWith('tls-') || k in ['bind', 'protected-mode', 'port', 'replicaof', 'slaveof', 'requirepass', 'masterauth', 'masteruser', 'user', 'aclfile', 'dir', 'dbfilename', 'appendonly', 'appendfsync', 'appendfilename', 'appenddirname', 'save', 'shutdown-on-sigterm', 'shutdown-on-sigint', 'repl-diskless-sync', 'min-replicas-to-write', 'min-replicas-max-lag', 'min-slaves-to-write', 'min-slaves-max-lag', 'repl-ping-replica-period', 'repl-ping-slave-period', 'replica-serve-stale-data', 'slave-serve-stale-data', 'replica-read-only', 'slave-read-only', 'replica-priority', 'slave-priority', 'replica-announce-ip', 'replica-announce-port', 'include', 'rename-command', 'daemonize', 'pidfile', 'logfile', 'unixsocket', 'cluster-enabled', 'supervised', 'enable-debug-command', 'enable-protected-configs', 'enable-module-command', 'loadmodule'] || k in ['maxmemory', 'maxmemory-policy', 'maxmemory-samples', 'maxclients', 'timeout', 'tcp-keepalive', 'hz', 'dynamic-hz', 'slowlog-log-slower-than', 'slowlog-max-len', 'latency-monitor-threshold', 'notify-keyspace-events', 'lazyfree-lazy-eviction', 'lazyfree-lazy-expire', 'lazyfree-lazy-server-del', 'activedefrag', 'hash-max-ziplist-entries', 'hash-max-ziplist-value', 'list-max-ziplist-size', 'set-max-intset-entries', 'zset-max-ziplist-entries', 'zset-max-ziplist-value', 'stream-node-max-bytes', 'stream-node-max-entries'] || k in ['databases', 'io-threads', 'io-threads-do-reads', 'tcp-backlog']))[0] + ': not a parameter the operator can set (see docs/kinds.md for those it can)'"
type RedisConfig map[string]RedisConfigValue

// RedisConfigValue is a parameter's value, as redis.conf writes it: one
// line, without quotes or backslashes.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^[^\r\n"'\\]*$`
type RedisConfigValue string

// LiveParameters are the parameters of RedisConfig a running node takes
// with CONFIG SET: a change is applied to every node with no restart.
var LiveParameters = []string{
	"maxmemory", "maxmemory-policy", "maxmemory-samples", "maxclients", "timeout", "tcp-keepalive", "hz", "dynamic-hz",
	"slowlog-log-slower-than", "slowlog-max-len", "latency-monitor-threshold", "notify-keyspace-events",
	"lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "activedefrag",
	"hash-max-ziplist-entries", "hash-max-ziplist-value", "list-max-ziplist-size", "set-max-intset-entries",
	"zset-max-ziplist-entries", "zset-max-ziplist-value", "stream-node-max-bytes", "stream-node-max-entries",
}

// RestartParameters are the parameters of RedisConfig a node takes only
// when it starts: a change replaces the pods, one at a time.
var RestartParameters = []string{"databases", "io-threads", "io-threads-do-reads", "tcp-backlog"}

// OwnedParameters are the parameters the operator sets itself (with every
// tls-* one): RedisConfig refuses them.
var OwnedParameters = []string{
	"bind", "protected-mode", "port", "replicaof", "slaveof", "requirepass", "masterauth", "masteruser", "user", "aclfile",
	"dir", "dbfilename", "appendonly", "appendfsync", "appendfilename", "appenddirname", "save", "shutdown-on-sigterm",
	"shutdown-on-sigint", "repl-diskless-sync", "min-replicas-to-write", "min-replicas-max-lag", "min-slaves-to-write",
	"min-slaves-max-lag", "repl-ping-replica-period", "repl-ping-slave-period", "replica-serve-stale-data",
	"slave-serve-stale-data", "replica-read-only", "slave-read-only", "replica-priority", "slave-priority",
	"replica-announce-ip", "replica-announce-port", "include", "rename-command", "daemonize", "pidfile", "logfile",
	"unixsocket", "cluster-enabled", "supervised", "enable-debug-command", "enable-protected-configs",
	"enable-module-command", "loadmodule",
}

// Reasons of the RedisConfigApplied condition.
const (
	// ConditionRedisConfigApplied reports whether every node runs the
	// live parameters of spec.redisConfig.
	ConditionRedisConfigApplied = "RedisConfigApplied"
	// ReasonConfigApplied: every node answered with the values asked.
	ReasonConfigApplied = "Applied"
	// ReasonParameterRefused: a node refused a value (CONFIG SET); the
	// message names the parameter and the node's answer.
	ReasonParameterRefused = "ParameterRefused"
)
