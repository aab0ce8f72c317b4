package controller

import (
	"crypto/tls"
	"time"

	"github.com/app-operator/app-operator/internal/controller/etcd"
	"github.com/app-operator/app-operator/internal/controller/redis"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
)

// Options configure the controllers. The zero value is valid: every field
// left zero takes its default.
type Options struct {
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// Recheck is how often a resource blocked by something the operator
	// does not watch (a child it does not control, an admission check that
	// refused a child) looks again; engine.DefaultRecheck when zero.
	Recheck time.Duration
	// Settle is how long a status write waits for a silent Deployment
	// controller to observe a changed Deployment (see the engine's rolloutWait);
	// engine.DefaultSettle when zero.
	Settle time.Duration
	// MaxConcurrentReconciles is how many resources of one kind are
	// reconciled at once (each kind has its own workers); 1 when zero.
	MaxConcurrentReconciles int
	// StatefulReconciles is how many resources of one data-service kind
	// (RedisEnterpriseCluster, EtcdCluster, EtcdBackup, EtcdRestore) are
	// reconciled at once; engine.DefaultStatefulReconciles when zero, and
	// never fewer than MaxConcurrentReconciles.
	StatefulReconciles int
	// Defaults are the operator-wide settings of every builder.
	Defaults resources.Defaults
	// MicroServiceDeploy are the operator-wide settings of that kind: how
	// it exposes instances.
	MicroServiceDeploy microservicedeploy.Options
	// RedisFailoverAfter is how long a RedisEnterpriseCluster's primary
	// must be down (its pod gone or not ready, or Redis silent), with no
	// replica still streaming from it, before a replica replaces it;
	// DefaultRedisFailoverAfter when zero.
	RedisFailoverAfter time.Duration
	// EtcdJoinTimeout is how long an EtcdCluster's new member may take to
	// join before it is removed and added again;
	// etcdcluster.DefaultJoinTimeout when zero.
	EtcdJoinTimeout time.Duration
	// Metrics is where the gauges of the EtcdClusters and
	// RedisEnterpriseClusters are registered (see internal/clustermetrics);
	// controller-runtime's registry, which the manager's metrics endpoint
	// serves, when nil.
	Metrics prometheus.Registerer
	// SnapshotImage is the image of the etcd snapshot tool (the
	// operator's own image, which carries it), that EtcdBackup Jobs and
	// the restore of an EtcdCluster's first member run;
	// backup.DefaultSnapshotImage when empty.
	SnapshotImage string
	// RedisImage is the open-source Redis image (see redis.Options.Image);
	// redis:7.0.15 when empty.
	RedisImage string
	// RedisNodes is how the RedisEnterpriseCluster controller reaches the
	// Redis nodes (see redis.Options.Nodes); redisnode.Client when nil.
	// Tests put a fault point here.
	RedisNodes func(password string, tls *tls.Config, plain map[string]bool) redisnode.Nodes
}

// DefaultRedisFailoverAfter is the failover window of a Redis primary (see
// redis.DefaultFailoverAfter).
const DefaultRedisFailoverAfter = redis.DefaultFailoverAfter

// DefaultStatefulReconciles is how many resources of one data-service kind
// are reconciled at once by default (see engine.DefaultStatefulReconciles).
const DefaultStatefulReconciles = engine.DefaultStatefulReconciles

// MinRedisFailoverAfter is the shortest failover window a user may set (see
// redis.MinFailoverAfter).
const MinRedisFailoverAfter = redis.MinFailoverAfter

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	e := o.engine().WithDefaults()
	o.Clock, o.Recheck, o.Settle, o.MaxConcurrentReconciles, o.StatefulReconciles = e.Clock, e.Recheck, e.Settle, e.MaxConcurrentReconciles, e.StatefulReconciles
	if o.RedisFailoverAfter <= 0 {
		o.RedisFailoverAfter = DefaultRedisFailoverAfter
	}
	if o.EtcdJoinTimeout <= 0 {
		o.EtcdJoinTimeout = etcdcluster.DefaultJoinTimeout
	}
	return o
}

// engine returns the options of the engine the controllers share.
func (o Options) engine() engine.Options {
	return engine.Options{Clock: o.Clock, Recheck: o.Recheck, Settle: o.Settle, MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		StatefulReconciles: o.StatefulReconciles}
}

// etcd returns the options of the etcd kinds' controllers.
func (o Options) etcd() etcd.Options {
	return etcd.Options{Clock: o.Clock, JoinTimeout: o.EtcdJoinTimeout, SnapshotImage: o.SnapshotImage, Metrics: o.Metrics}
}

// redis returns the options of the RedisEnterpriseCluster controller.
func (o Options) redis() redis.Options {
	return redis.Options{Clock: o.Clock, FailoverAfter: o.RedisFailoverAfter, SnapshotImage: o.SnapshotImage, Image: o.RedisImage, Metrics: o.Metrics, Nodes: o.RedisNodes}
}
