package etcd

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdrestores/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.database.coreos.com,resources=etcdclusters,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// etcdRestoreKindName is the EtcdRestore's controller and field owner.
const etcdRestoreKindName = "etcdrestore"

// RestoreKind is the EtcdRestore's controller: it creates the
// EtcdCluster the restore names, with spec.restore set to the snapshot,
// and follows it until it is Ready with every member. The EtcdCluster's
// controller does the restore (see etcdcluster.Restore); the restore's
// report, in the first member's pod, says which snapshot it took or why
// it failed. It never touches an EtcdCluster it did not create.
func RestoreKind(Options) engine.Kind[*etcdv1beta2.EtcdRestore] {
	k := engine.Kind[*etcdv1beta2.EtcdRestore]{
		Name: etcdRestoreKindName,
		GVK:  etcdv1beta2.GroupVersion.WithKind("EtcdRestore"),
		New:  func() *etcdv1beta2.EtcdRestore { return &etcdv1beta2.EtcdRestore{} },
		Watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			// The cluster a restore created wakes it as it comes up, and
			// its first member's pod as the restore reports.
			return b.Watches(&etcdv1beta2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(restoreOf)).
				Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(restoreOfPod(mgr.GetClient()))), nil
		},
	}
	return engine.Phases[*etcdv1beta2.EtcdRestore, struct{}, restoreObserved, restorePlan, struct{}]{
		Observe: func(ctx context.Context, c engine.Clients, o *etcdv1beta2.EtcdRestore, _ struct{}) (restoreObserved, error) {
			return observeRestore(ctx, c, o)
		},
		Build: func(*etcdv1beta2.EtcdRestore, *restorePass) ([]runtime.ApplyConfiguration, error) { return nil, nil },
		Plan: func(o *etcdv1beta2.EtcdRestore, pass *restorePass, _ engine.Observed, scope engine.Scope) restorePlan {
			if scope == engine.SafetySteps {
				return restorePlan{}
			}
			return planRestore(o, pass.Observed.cluster, pass.Observed.report)
		},
		Act: func(ctx context.Context, c engine.Clients, _ *etcdv1beta2.EtcdRestore, pass *restorePass) (struct{}, engine.Step, error) {
			s, err := createRestored(ctx, c, pass.Decision)
			return struct{}{}, s, err
		},
		SetStatus: func(o *etcdv1beta2.EtcdRestore, pass *restorePass, report engine.Report, now metav1.Time) {
			// A step taken (the cluster created) is a restore under way.
			status.EtcdRestore(&o.Status, o.Generation, cmp.Or(report.Step.Waiting, report.Step.Took), report.Failure, now)
			if r := pass.Observed.report; r != nil && !r.Failed() && r.Key != "" {
				o.Status.Backup = r.Key
			}
		},
	}.With(k)
}

// restorePass is the record of an EtcdRestore's pass.
type restorePass = engine.PassOf[struct{}, restoreObserved, restorePlan, struct{}]

// restoreObserved is what a pass of an EtcdRestore reads: the EtcdCluster
// the restore names (nil when there is none) and, once its first member's
// restore ran, what the snapshot tool reported (nil before).
type restoreObserved struct {
	cluster *etcdv1beta2.EtcdCluster
	report  *backuprun.EtcdResult
}

// observeRestore reads the cluster o names and, when o created it, the
// report of the restore in its first member's pod.
func observeRestore(ctx context.Context, c client.Client, o *etcdv1beta2.EtcdRestore) (restoreObserved, error) {
	var seen restoreObserved
	cluster := &etcdv1beta2.EtcdCluster{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Spec.EtcdCluster.Name}, cluster); {
	case apierrors.IsNotFound(err):
		return seen, nil
	case err != nil:
		return seen, err
	}
	seen.cluster = cluster
	if cluster.Annotations[etcdv1beta2.RestoredByAnnotation] != o.Name {
		return seen, nil
	}
	pod := &corev1.Pod{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: etcdcluster.MemberName(cluster.Name, 0)}, pod); {
	case apierrors.IsNotFound(err):
		return seen, nil
	case err != nil:
		return seen, err
	}
	if labels.SelectorFromSet(etcdcluster.Selector(cluster.Name)).Matches(labels.Set(pod.Labels)) {
		seen.report = restoreReport(pod)
	}
	return seen, nil
}

// restoreReport is what the restore init container of pod last reported
// (its termination message); nil when it has not ended yet, or its
// message is not the tool's.
func restoreReport(pod *corev1.Pod) *backuprun.EtcdResult {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name != etcdcluster.RestoreContainerName {
			continue
		}
		// A container that failed and waits to run again keeps its last
		// report in its last state.
		ended := cmp.Or(s.State.Terminated, s.LastTerminationState.Terminated)
		if ended == nil {
			return nil
		}
		r, err := backuprun.ParseEtcd(ended.Message)
		if err != nil {
			return nil
		}
		return &r
	}
	return nil
}

// restoreOfPod maps a pod to the EtcdRestore that created its EtcdCluster,
// read with c.
func restoreOfPod(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[resources.LabelInstance]
		if name == "" || o.GetLabels()[resources.LabelName] != etcdcluster.KindName {
			return nil
		}
		cluster := &etcdv1beta2.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
			return nil
		}
		return restoreOf(ctx, cluster)
	}
}

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
// when there is none) and the report of its first member's restore (nil
// when there is none yet).
func planRestore(o *etcdv1beta2.EtcdRestore, cluster *etcdv1beta2.EtcdCluster, report *backuprun.EtcdResult) restorePlan {
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
	// The tool's reason says more than the cluster's, which sees only a
	// container that keeps exiting.
	if report != nil && report.Failed() {
		return restorePlan{step: engine.Step{Failure: &conditions.Failure{Reason: cmp.Or(report.Reason, conditions.ReasonFailed),
			Message: fmt.Sprintf("EtcdCluster %s: the restore of its first member failed: %s", name, cmp.Or(report.Error, report.Reason))}}}
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
