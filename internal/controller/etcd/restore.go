package etcd

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
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=create

// etcdRestoreKindName is the EtcdRestore's controller and field owner.
const etcdRestoreKindName = "etcdrestore"

// RestoreKind is the EtcdRestore's controller: it creates the
// EtcdCluster the restore names, with spec.restore set to the snapshot,
// and follows it until it is Ready with every member. The EtcdCluster's
// controller does the restore (see etcdcluster.Restore). It never
// touches an EtcdCluster it did not create.
func RestoreKind(Options) engine.Kind[*etcdv1beta2.EtcdRestore] {
	k := engine.Kind[*etcdv1beta2.EtcdRestore]{
		Name: etcdRestoreKindName,
		GVK:  etcdv1beta2.GroupVersion.WithKind("EtcdRestore"),
		New:  func() *etcdv1beta2.EtcdRestore { return &etcdv1beta2.EtcdRestore{} },
		Watch: func(_ ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			// The cluster a restore created wakes it as it comes up.
			return b.Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(restoreOf)), nil
		},
	}
	return engine.Phases[*etcdv1beta2.EtcdRestore, struct{}, *etcdv1beta2.EtcdCluster, restorePlan, struct{}]{
		// The cluster the restore names; nil when there is none.
		Observe: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdRestore, _ struct{}) (*etcdv1beta2.EtcdCluster, error) {
			cluster := &etcdv1beta2.EtcdCluster{}
			err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.EtcdCluster.Name}, cluster)
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return cluster, err
		},
		Build: func(*etcdv1beta2.EtcdRestore, *restorePass) ([]runtime.ApplyConfiguration, error) { return nil, nil },
		Plan: func(o *etcdv1beta2.EtcdRestore, pass *restorePass, _ engine.Observed, scope engine.Scope) restorePlan {
			if scope == engine.SafetySteps {
				return restorePlan{}
			}
			return planRestore(o, pass.Observed)
		},
		Act: func(ctx context.Context, c engine.Clients, _ *etcdv1beta2.EtcdRestore, pass *restorePass) (struct{}, engine.Step, error) {
			s, err := createRestored(ctx, c, pass.Decision)
			return struct{}{}, s, err
		},
		SetStatus: func(o *etcdv1beta2.EtcdRestore, _ *restorePass, report engine.Report, now metav1.Time) {
			// A step taken (the cluster created) is a restore under way.
			status.EtcdRestore(&o.Status, o.Generation, cmp.Or(report.Step.Waiting, report.Step.Took), report.Failure, now)
		},
	}.With(k)
}

// restorePass is the record of an EtcdRestore's pass: it observes the
// EtcdCluster the restore names.
type restorePass = engine.PassOf[struct{}, *etcdv1beta2.EtcdCluster, restorePlan, struct{}]

// restorePlan is the step of a restore: create is the EtcdCluster to
// create (nil when none), step what the pass reports.
type restorePlan struct {
	create *etcdv1beta2.EtcdCluster
	step   engine.Step
}

// restoreOf maps an EtcdCluster to the EtcdRestore that created it.
func restoreOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[etcdv1beta2.RestoredByAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// planRestore decides the restore's step from the cluster it names (nil
// when there is none).
func planRestore(o *etcdv1beta2.EtcdRestore, cluster *etcdv1beta2.EtcdCluster) restorePlan {
	name := o.Spec.EtcdCluster.Name
	switch {
	case cluster == nil && o.Status.Succeeded:
		// Done: a cluster deleted since is not brought back.
		return restorePlan{}
	case cluster == nil:
		cluster = &etcdv1beta2.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Annotations: map[string]string{etcdv1beta2.RestoredByAnnotation: o.Name}},
			Spec:       *o.Spec.ClusterSpec.DeepCopy(),
		}
		source := o.Spec.SnapshotSource
		cluster.Spec.Restore = &source
		return restorePlan{create: cluster, step: engine.Step{Took: fmt.Sprintf("Created EtcdCluster %s from the snapshot", name),
			Event: &engine.StepEvent{Type: corev1.EventTypeNormal, Reason: etcdv1beta2.EventRestoreStarted, Action: "Restore"}}}
	case cluster.Annotations[etcdv1beta2.RestoredByAnnotation] != o.Name:
		return restorePlan{step: engine.Step{Failure: &conditions.Failure{Reason: etcdv1beta2.ReasonClusterExists, Message: fmt.Sprintf(
			"spec.etcdCluster.name: EtcdCluster %s exists and was not created by this restore; a restore never touches an existing cluster: name a new one", name)}}}
	}
	if d := meta.FindStatusCondition(cluster.Status.Conditions, conditions.Degraded); d != nil && d.Status == metav1.ConditionTrue && d.ObservedGeneration == cluster.Generation {
		return restorePlan{step: engine.Step{Failure: &conditions.Failure{Reason: d.Reason, Message: fmt.Sprintf("EtcdCluster %s: %s", name, d.Message)}}}
	}
	ready := meta.FindStatusCondition(cluster.Status.Conditions, conditions.Ready)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != cluster.Generation || cluster.Status.Size != cluster.Spec.Size {
		why := "starting"
		if ready != nil && ready.Message != "" {
			why = ready.Message
		}
		return restorePlan{step: engine.Step{Waiting: fmt.Sprintf("EtcdCluster %s is not Ready yet: %s", name, why)}}
	}
	return restorePlan{}
}

// createRestored creates the EtcdCluster of a restore, when one is
// planned, and returns the step the pass reports.
func createRestored(ctx context.Context, c client.Client, plan restorePlan) (engine.Step, error) {
	cluster := plan.create
	if cluster == nil {
		return plan.step, nil
	}
	if err := c.Create(ctx, cluster, client.FieldOwner(engine.FieldOwner(etcdRestoreKindName))); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created since the cache was read: the next pass sees it.
			return engine.Step{Waiting: fmt.Sprintf("Waiting for EtcdCluster %s", cluster.Name)}, nil
		}
		return engine.Step{}, fmt.Errorf("create EtcdCluster %s: %w", cluster.Name, err)
	}
	return plan.step, nil
}
