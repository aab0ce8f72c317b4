// Package redis holds the controller of RedisEnterpriseCluster, a data
// service in the phases of engine.Phases: its nodes observed and their
// roles changed through Redis, one step at a time, and its backups.
package redis

import (
	"crypto/tls"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// Options configure the RedisEnterpriseCluster controller. The zero value
// is valid: every field left zero takes its default.
type Options struct {
	// Clock is the time of the passes; the real clock when nil.
	Clock clock.PassiveClock
	// FailoverAfter is how long a primary must be down (its pod gone or
	// not ready, or Redis silent), with no replica still streaming from
	// it, before a replica replaces it; DefaultFailoverAfter when zero.
	FailoverAfter time.Duration
	// SnapshotImage is the operator's own image: that of the snapshot
	// tool the backup Jobs run, and of the console
	// (redisenterprisecluster.ConsoleCommand); backup.DefaultSnapshotImage
	// when empty.
	SnapshotImage string
	// Image is the open-source Redis image the nodes run when their spec
	// names Redis Enterprise's image or leaves the default
	// (redisenterprisecluster.Image); redisenterprisecluster.DefaultImage
	// when empty. An installer names a private registry's mirror here.
	Image string
	// Metrics is where the gauges are registered; controller-runtime's
	// registry when nil.
	Metrics prometheus.Registerer
	// Nodes reaches the Redis nodes of a cluster with its password, with
	// TLS when tls is set but at the addresses of plain;
	// redisnode.Client when nil.
	Nodes func(password string, tls *tls.Config, plain map[string]bool) redisnode.Nodes
}

// DefaultFailoverAfter is the failover window of a primary, as Sentinel's
// usual down-after-milliseconds: long enough that a pause (a slow disk, a
// long command, a busy node) is not taken for a failure.
const DefaultFailoverAfter = 30 * time.Second

// MinFailoverAfter is the shortest failover window the operator's flag
// takes: a primary cut off from its replicas (and from the operator, not
// from its clients) refuses writes once its replicas' acknowledgements are
// redisenterprisecluster.MinReplicasMaxLag old, counted in whole seconds
// and sent once a second. A shorter window would promote a replica while
// the old primary still takes writes that are then lost.
const MinFailoverAfter = redisenterprisecluster.MinReplicasMaxLag + 2*time.Second
