package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/etcd"
)

// NewObservedEtcdReconciler returns the EtcdCluster reconciler outside a
// manager, reaching etcd through dial, with its gauges registered in reg
// and its events sent to recorder.
func NewObservedEtcdReconciler(c client.Client, dial etcd.Dialer, reg prometheus.Registerer, recorder events.EventRecorder) reconcile.Reconciler {
	opts := Options{Metrics: reg}
	k := etcdClusterKindWith(opts, dial)
	return newReconciler(k, c, c, recorder, newEngine(c.Scheme(), opts))
}

// NewEtcdReconcilerAt is the EtcdCluster reconciler outside a manager,
// reaching etcd through dial, with clk for the time.
func NewEtcdReconcilerAt(c client.Client, dial etcd.Dialer, clk clock.PassiveClock) reconcile.Reconciler {
	opts := Options{Metrics: prometheus.NewRegistry(), Clock: clk}
	return newReconciler(etcdClusterKindWith(opts, dial), c, c, events.NewFakeRecorder(100), newEngine(c.Scheme(), opts))
}
