package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/clock"

	"github.com/app-operator/app-operator/internal/applyschema"
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
	// refused a child) looks again; DefaultRecheck when zero.
	Recheck time.Duration
	// Settle is how long a status write waits for a silent Deployment
	// controller to observe a changed Deployment (see rolloutWait);
	// DefaultSettle when zero.
	Settle time.Duration
	// MaxConcurrentReconciles is how many resources of one kind are
	// reconciled at once (each kind has its own workers); 1 when zero.
	MaxConcurrentReconciles int
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
	// RedisEnterpriseClusters are registered (see clustermetrics.go);
	// controller-runtime's registry, which the manager's metrics endpoint
	// serves, when nil.
	Metrics prometheus.Registerer
	// SnapshotImage is the image of the etcd snapshot tool (the
	// operator's own image, which carries it), that EtcdBackup Jobs and
	// the restore of an EtcdCluster's first member run;
	// DefaultSnapshotImage when empty.
	SnapshotImage string
}

// DefaultRedisFailoverAfter is the failover window of a Redis primary, as
// Sentinel's usual down-after-milliseconds: long enough that a pause (a
// slow disk, a long command, a busy node) is not taken for a failure.
const DefaultRedisFailoverAfter = 30 * time.Second

// DefaultRecheck is how often a resource blocked by something the operator
// does not watch looks again: a child it does not control, or an admission
// check (a webhook, a ValidatingAdmissionPolicy) that refused a child.
const DefaultRecheck = time.Minute

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Recheck <= 0 {
		o.Recheck = DefaultRecheck
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	o.MaxConcurrentReconciles = max(o.MaxConcurrentReconciles, 1)
	if o.RedisFailoverAfter <= 0 {
		o.RedisFailoverAfter = DefaultRedisFailoverAfter
	}
	if o.EtcdJoinTimeout <= 0 {
		o.EtcdJoinTimeout = etcdcluster.DefaultJoinTimeout
	}
	return o
}

// engine is what the controllers of every kind share: the options with
// their defaults, and the converter of objects to typed field sets that
// apply comparisons use (internal/applyschema).
type engine struct {
	opts  Options
	types managedfields.TypeConverter
}

func newEngine(scheme *runtime.Scheme, opts Options) *engine {
	return &engine{opts: opts.withDefaults(), types: applyschema.TypeConverter(scheme)}
}
