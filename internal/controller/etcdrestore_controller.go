package controller

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=create

// RestoredByAnnotation on an EtcdCluster names the EtcdRestore that
// created it.
const RestoredByAnnotation = "etcd.database.coreos.com/restored-by"

// etcdRestoreKindName is the EtcdRestore's controller and field owner.
const etcdRestoreKindName = "etcdrestore"

// etcdRestoreKind is the EtcdRestore's controller: it creates the
// EtcdCluster the restore names, with spec.restore set to the snapshot,
// and follows it until it is Ready with every member. The EtcdCluster's
// controller does the restore (see etcdcluster.Restore). It never
// touches an EtcdCluster it did not create.
func etcdRestoreKind(Options) kind[*etcdv1beta2.EtcdRestore] {
	k := kind[*etcdv1beta2.EtcdRestore]{
		name:      etcdRestoreKindName,
		gvk:       etcdv1beta2.GroupVersion.WithKind("EtcdRestore"),
		newObject: func() *etcdv1beta2.EtcdRestore { return &etcdv1beta2.EtcdRestore{} },
		watch: func(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			// The cluster a restore created wakes it as it comes up.
			return b.Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(restoreOf)), nil
		},
	}
	return stepKind[*etcdv1beta2.EtcdRestore, restoreLook]{
		look: func(ctx context.Context, c clients, o *etcdv1beta2.EtcdRestore) (restoreLook, error) {
			cluster := &etcdv1beta2.EtcdCluster{}
			err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.EtcdCluster.Name}, cluster)
			if apierrors.IsNotFound(err) {
				return restoreLook{}, nil
			}
			return restoreLook{cluster: cluster}, err
		},
		build: func(*etcdv1beta2.EtcdRestore, *restoreLook) ([]runtime.ApplyConfiguration, error) { return nil, nil },
		step: func(ctx context.Context, c clients, o *etcdv1beta2.EtcdRestore, look *restoreLook, _ observed, scope stepScope) (Step, error) {
			if scope == safetySteps {
				return Step{}, nil
			}
			return restoreStep(ctx, c, o, look)
		},
		setStatus: func(o *etcdv1beta2.EtcdRestore, _ *restoreLook, pass report, now metav1.Time) {
			// A step taken (the cluster created) is a restore under way.
			status.EtcdRestore(&o.Status, o.Generation, cmp.Or(pass.step.Waiting, pass.step.Took), pass.failure, now)
		},
	}.with(k)
}

// restoreLook is the EtcdCluster the restore names; nil when there is
// none.
type restoreLook struct {
	cluster *etcdv1beta2.EtcdCluster
}

// restoreOf maps an EtcdCluster to the EtcdRestore that created it.
func restoreOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[RestoredByAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

func restoreStep(ctx context.Context, c clients, o *etcdv1beta2.EtcdRestore, look *restoreLook) (Step, error) {
	name := o.Spec.EtcdCluster.Name
	cluster := look.cluster
	switch {
	case cluster == nil && o.Status.Succeeded:
		// Done: a cluster deleted since is not brought back.
		return Step{}, nil
	case cluster == nil:
		cluster = &etcdv1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Annotations: map[string]string{RestoredByAnnotation: o.Name}},
			Spec:       *o.Spec.ClusterSpec.DeepCopy(),
		}
		source := o.Spec.SnapshotSource
		cluster.Spec.Restore = &source
		if err := c.Create(ctx, cluster, client.FieldOwner(FieldOwner(etcdRestoreKindName))); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Created since the cache was read: the next pass sees it.
				return Step{Waiting: fmt.Sprintf("Waiting for EtcdCluster %s", name)}, nil
			}
			return Step{}, fmt.Errorf("create EtcdCluster %s: %w", name, err)
		}
		return Step{Took: fmt.Sprintf("Created EtcdCluster %s from the snapshot", name),
			Event: &StepEvent{Type: corev1.EventTypeNormal, Reason: EventRestoreStarted, Action: "Restore"}}, nil
	case cluster.Annotations[RestoredByAnnotation] != o.Name:
		return Step{Failure: &status.Failure{Reason: status.ReasonClusterExists, Message: fmt.Sprintf(
			"spec.etcdCluster.name: EtcdCluster %s exists and was not created by this restore; a restore never touches an existing cluster: name a new one", name)}}, nil
	}
	if d := meta.FindStatusCondition(cluster.Status.Conditions, conditions.Degraded); d != nil && d.Status == metav1.ConditionTrue && d.ObservedGeneration == cluster.Generation {
		return Step{Failure: &status.Failure{Reason: d.Reason, Message: fmt.Sprintf("EtcdCluster %s: %s", name, d.Message)}}, nil
	}
	ready := meta.FindStatusCondition(cluster.Status.Conditions, conditions.Ready)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != cluster.Generation || cluster.Status.Size != cluster.Spec.Size {
		why := "starting"
		if ready != nil && ready.Message != "" {
			why = ready.Message
		}
		return Step{Waiting: fmt.Sprintf("EtcdCluster %s is not Ready yet: %s", name, why)}, nil
	}
	return Step{}, nil
}
