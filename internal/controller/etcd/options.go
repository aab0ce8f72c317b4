// Package etcd holds the controllers of the etcd kinds: EtcdCluster, a
// data service in the phases of engine.Phases (its members observed and
// changed through etcd's API, one step at a time), and the EtcdBackup Jobs
// and EtcdRestore clusters that follow it.
package etcd

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/app-operator/app-operator/internal/etcd"
)

// Options configure the etcd kinds' controllers. The zero value is valid:
// every field left zero takes its default.
type Options struct {
	// Clock is the time of the passes; the real clock when nil.
	Clock clock.PassiveClock
	// JoinTimeout is how long a new member may take to join before it is
	// removed and added again; etcdcluster.DefaultJoinTimeout when zero.
	JoinTimeout time.Duration
	// SnapshotImage is the image of the snapshot tool that EtcdBackup Jobs
	// and the restore of a cluster's first member run;
	// backup.DefaultSnapshotImage when empty.
	SnapshotImage string
	// Metrics is where the gauges are registered; controller-runtime's
	// registry when nil.
	Metrics prometheus.Registerer
	// Dial reaches the members of a cluster without TLS; etcd.Dial when
	// nil.
	Dial etcd.Dialer
}
