package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/controller/etcd"
	"github.com/app-operator/app-operator/internal/engine"
	etcdclient "github.com/app-operator/app-operator/internal/etcd"
)

// NewObservedEtcdReconciler returns the EtcdCluster reconciler outside a
// manager, reaching etcd through dial, with its gauges registered in reg
// and its events sent to recorder.
func NewObservedEtcdReconciler(c client.Client, dial etcdclient.Dialer, reg prometheus.Registerer, recorder events.EventRecorder) reconcile.Reconciler {
	k := etcd.ClusterKind(etcd.Options{Metrics: reg, Dial: dial})
	return engine.NewReconciler(k, c, c, recorder, engine.NewEnv(c.Scheme(), engine.Options{}))
}

// NewEtcdReconcilerAt is the EtcdCluster reconciler outside a manager,
// reaching etcd through dial, with clk for the time.
func NewEtcdReconcilerAt(c client.Client, dial etcdclient.Dialer, clk clock.PassiveClock) reconcile.Reconciler {
	k := etcd.ClusterKind(etcd.Options{Metrics: prometheus.NewRegistry(), Clock: clk, Dial: dial})
	return engine.NewReconciler(k, c, c, events.NewFakeRecorder(100), engine.NewEnv(c.Scheme(), engine.Options{Clock: clk}))
}
