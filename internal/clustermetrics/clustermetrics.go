// Package clustermetrics holds what the gauges of the data services share:
// their labels, their registration, and the gauge of the last backup each
// resource that takes backups stored.
package clustermetrics

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The labels of every cluster gauge: the custom resource's namespace and
// name; the replica's name for a gauge of each replica.
const (
	LabelNamespace = "namespace"
	LabelName      = "name"
	LabelReplica   = "replica"
)

var ClusterLabels = []string{LabelNamespace, LabelName}

// LabelsOf are the labels of the gauges of the cluster at key.
func LabelsOf(key client.ObjectKey) prometheus.Labels {
	return prometheus.Labels{LabelNamespace: key.Namespace, LabelName: key.Name}
}

// Register registers v with reg (controller-runtime's registry when
// nil) and returns it; when reg already holds a collector of the same
// name and labels (a second manager in one process), that one.
func Register(reg prometheus.Registerer, v *prometheus.GaugeVec) *prometheus.GaugeVec {
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

// Forget drops the gauges of the cluster at key from vecs.
func Forget(key client.ObjectKey, vecs ...*prometheus.GaugeVec) {
	for _, v := range vecs {
		v.DeletePartialMatch(LabelsOf(key))
	}
}

// Bool is the value of a gauge that says yes or no.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// BackupGauges hold, for each resource of one kind that takes backups
// (an EtcdBackup, a RedisEnterpriseCluster with spec.backup), when the
// last backup it stored was taken: the alert on backups that stop
// succeeding reads its age. Labelled kind, namespace and name.
type BackupGauges struct {
	kind        string
	lastSuccess *prometheus.GaugeVec
}

// NewBackupGauges registers the gauge of the backups of kind with reg.
func NewBackupGauges(reg prometheus.Registerer, kind string) *BackupGauges {
	return &BackupGauges{kind: kind, lastSuccess: Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "app_operator_backup_last_success_timestamp_seconds",
		Help: "The Unix time the last backup a resource stored was taken (absent until one is).",
	}, []string{"kind", LabelNamespace, LabelName}))}
}

// Record sets the gauge of the resource key to taken, when a backup was
// taken.
func (g *BackupGauges) Record(key client.ObjectKey, taken *metav1.Time) {
	if taken == nil {
		return
	}
	g.lastSuccess.WithLabelValues(g.kind, key.Namespace, key.Name).Set(float64(taken.Unix()))
}

// Forget drops the gauge of the resource key.
func (g *BackupGauges) Forget(key client.ObjectKey) {
	labels := LabelsOf(key)
	labels["kind"] = g.kind
	g.lastSuccess.DeletePartialMatch(labels)
}
