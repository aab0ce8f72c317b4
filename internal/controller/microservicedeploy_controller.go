package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/microservicedeploy"
	"github.com/app-operator/app-operator/internal/status"
)

// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys,verbs=get;list;watch
// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys/status,verbs=patch
// Setting blockOwnerDeletion on a child needs update on the owner's finalizers
// where OwnerReferencesPermissionEnforcement admission is on.
// +kubebuilder:rbac:groups=custom.ops,resources=microservicedeploys/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// microServiceDeployKind reconciles MicroServiceDeploy: a ServiceAccount,
// ConfigMap, Service and Deployment, an HPA while autoscaling, an Ingress
// when exposed and holding its host (lookup finds the holder among the
// instances that want the host, from the cache). The namespace's
// ResourceQuota is kept by its own controller (namespacequota_controller.go);
// this one reads it for the status.
func microServiceDeployKind(all Options) engine.Kind[*customv1.MicroServiceDeploy] {
	gvk := customv1.GroupVersion.WithKind("MicroServiceDeploy")
	opts := all.MicroServiceDeploy
	build := func(o *customv1.MicroServiceDeploy, in engine.Observed) microservicedeploy.Children {
		return microservicedeploy.Build(resources.OwnerOf(o, gvk), &o.Spec, opts, all.Defaults, hostHolderOf(in))
	}
	return engine.Kind[*customv1.MicroServiceDeploy]{
		Name: "microservicedeploy",
		GVK:  gvk,
		New:  func() *customv1.MicroServiceDeploy { return &customv1.MicroServiceDeploy{} },
		Owns: []client.Object{
			&corev1.ServiceAccount{}, &corev1.ConfigMap{}, &corev1.Service{}, &appsv1.Deployment{},
			&autoscalingv2.HorizontalPodAutoscaler{}, &networkingv1.Ingress{},
		},
		// The HPA goes with autoscaling, the Ingress with exposure.
		Prunes: []client.Object{&autoscalingv2.HorizontalPodAutoscaler{}, &networkingv1.Ingress{}},
		Lookup: func(ctx context.Context, r engine.Clients, o *customv1.MicroServiceDeploy, in engine.Observed) error {
			return lookupHostHolder(ctx, r, o, opts, in)
		},
		Build: func(o *customv1.MicroServiceDeploy, in engine.Observed) ([]runtime.ApplyConfiguration, error) {
			return build(o, in).Objects(), nil
		},
		// The handed-over replica count does not depend on the host.
		Handover: func(o *customv1.MicroServiceDeploy) ([]runtime.ApplyConfiguration, error) {
			return build(o, nil).Handovers(), nil
		},
		Watch: func(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
			b = b.Watches(&corev1.ResourceQuota{}, quotaChanged(mgr.GetClient()))
			return watchHostClaims(mgr, b, opts)
		},
		StatusReads: func(ctx context.Context, r client.Reader, o *customv1.MicroServiceDeploy, children engine.Observed) error {
			q := &corev1.ResourceQuota{}
			err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: microservicedeploy.QuotaName}, q)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			children[engine.ChildKey("ResourceQuota", q.Name)] = q
			return nil
		},
		SetStatus: func(o *customv1.MicroServiceDeploy, pass engine.Report, now metav1.Time) {
			children, failure := pass.Children, pass.Failure
			exposure := microservicedeploy.Expose(&o.Spec, opts).LostTo(hostHolderOf(children))
			quota, _ := children[engine.ChildKey("ResourceQuota", microservicedeploy.QuotaName)].(*corev1.ResourceQuota)
			obs := status.MicroServiceDeployObserved{
				Deployment:      children.Deployment(o.Name),
				Idle:            o.Spec.Idle,
				URL:             exposure.URL,
				IngressApplied:  children[engine.ChildKey("Ingress", o.Name)] != nil,
				ExposureReason:  exposure.Reason,
				ExposureMessage: exposure.Message,
				Quota:           quotaStateOf(quota, &o.Spec),
				QuotaName:       microservicedeploy.QuotaName,
			}
			status.MicroServiceDeploy(&o.Status, o.Generation, obs, failure, now)
		},
	}
}

// quotaStateOf is what the namespace's quota (nil when missing) means to
// the instance with spec.
func quotaStateOf(q *corev1.ResourceQuota, spec *customv1.MicroServiceDeploySpec) status.QuotaState {
	switch {
	case q == nil:
		return status.QuotaMissing
	case !engine.AppliedBy(q, engine.FieldOwner(namespaceQuotaName)):
		return status.QuotaForeign
	case !microservicedeploy.Covers(q.Spec.Hard, spec):
		return status.QuotaShort
	default:
		return status.QuotaCovers
	}
}

// quotaChanged enqueues, when a namespace's quota appears, changes or
// goes, the instances whose QuotaReady condition it changes, read from the
// cache: every instance converging at once must not make each quota write
// wake them all. An instance that has not reported on the quota yet is
// waiting for its first pass, which reads the quota anyway: it is woken
// (a pass under way may have read the quota before the change) but stays
// behind new work, so that the quota written while a backlog of new
// instances is worked through does not put that whole backlog ahead of a
// resource created since.
func quotaChanged(c client.Reader) handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, gone bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q0, ok := o.(*corev1.ResourceQuota)
		if !ok || q0.Name != microservicedeploy.QuotaName {
			return
		}
		quota := q0
		if gone {
			quota = nil
		}
		list := &customv1.MicroServiceDeployList{}
		if err := c.List(ctx, list, client.InNamespace(q0.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Unable to list the MicroServiceDeploys of a quota", "resourcequota", klog.KObj(q0))
			return
		}
		pq, _ := q.(priorityqueue.PriorityQueue[reconcile.Request])
		for i := range list.Items {
			m := &list.Items[i]
			reported := quotaReasonOf(m)
			if status.QuotaReasonOf(quotaStateOf(quota, &m.Spec)) == reported {
				continue
			}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)}
			if reported == "" && pq != nil {
				pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, req)
				continue
			}
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, false, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, false, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, true, q)
		},
	}
}

func quotaReasonOf(m *customv1.MicroServiceDeploy) string {
	if c := meta.FindStatusCondition(m.Status.Conditions, conditions.QuotaReady); c != nil {
		return c.Reason
	}
	return ""
}

// hostIndex is the cache index of MicroServiceDeploys by the host they
// want (microservicedeploy.Expose), registered when there is a base domain.
const hostIndex = "custom.ops/host"

// hostHolderKey is where lookup puts, among the observed objects, the
// MicroServiceDeploy that holds the host the instance wants, when it is
// another one.
const hostHolderKey = "HostHolder"

// wantedHost is the host a MicroServiceDeploy wants; empty for none.
func wantedHost(o client.Object, opts microservicedeploy.Options) string {
	m, ok := o.(*customv1.MicroServiceDeploy)
	if !ok {
		return ""
	}
	return microservicedeploy.Expose(&m.Spec, opts).Host
}

// instancesWanting lists, from the cache, every MicroServiceDeploy the
// operator watches, in any namespace, that wants host.
func instancesWanting(ctx context.Context, r client.Reader, host string) ([]customv1.MicroServiceDeploy, error) {
	list := &customv1.MicroServiceDeployList{}
	if err := r.List(ctx, list, client.MatchingFields{hostIndex: host}); err != nil {
		return nil, fmt.Errorf("list MicroServiceDeploys wanting host %s: %w", host, err)
	}
	return list.Items, nil
}

func claimantOf(m *customv1.MicroServiceDeploy) microservicedeploy.Claimant {
	return microservicedeploy.Claimant{
		Namespace: m.Namespace, Name: m.Name,
		Created:  m.CreationTimestamp.Time,
		Deleting: !m.DeletionTimestamp.IsZero(),
	}
}

// lookupHostHolder puts into in the instance that holds the host o wants,
// if that is another instance.
func lookupHostHolder(ctx context.Context, r client.Reader, o *customv1.MicroServiceDeploy, opts microservicedeploy.Options, in engine.Observed) error {
	host := wantedHost(o, opts)
	if host == "" {
		return nil
	}
	others, err := instancesWanting(ctx, r, host)
	if err != nil {
		return err
	}
	candidates := make([]microservicedeploy.Claimant, len(others))
	for i := range others {
		candidates[i] = claimantOf(&others[i])
	}
	self := claimantOf(o)
	holder := microservicedeploy.HostHolder(self, candidates).String()
	if holder == self.String() {
		return nil
	}
	for i := range others {
		if candidates[i].String() == holder {
			in[hostHolderKey] = &others[i]
		}
	}
	return nil
}

// hostHolderOf is the namespace/name of the instance lookupHostHolder
// found; empty when the instance holds its host or wants none.
func hostHolderOf(in engine.Observed) string {
	if m, ok := in[hostHolderKey].(*customv1.MicroServiceDeploy); ok {
		return m.Namespace + "/" + m.Name
	}
	return ""
}

// watchHostClaims indexes the instances by the host they want and wakes,
// when an instance appears, goes, starts being deleted or changes the host
// it wants, every other instance that wants the host it wanted before or
// wants now: one of them may have to give the host up or may now hold it.
// Nothing is exposed without a base domain, so nothing is watched then.
func watchHostClaims(mgr ctrl.Manager, b *builder.Builder, opts microservicedeploy.Options) (*builder.Builder, error) {
	if opts.BaseDomain == "" {
		return b, nil
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &customv1.MicroServiceDeploy{}, hostIndex,
		func(o client.Object) []string {
			if host := wantedHost(o, opts); host != "" {
				return []string{host}
			}
			return nil
		}); err != nil {
		return nil, fmt.Errorf("index MicroServiceDeploys by host: %w", err)
	}
	r := mgr.GetClient()
	// For an update the handler maps both the old and the new object.
	othersWantingTheHost := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		host := wantedHost(o, opts)
		if host == "" {
			return nil
		}
		others, err := instancesWanting(ctx, r, host)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Unable to map a MicroServiceDeploy to the others wanting its host")
			return nil
		}
		var reqs []reconcile.Request
		for i := range others {
			if key := client.ObjectKeyFromObject(&others[i]); key != client.ObjectKeyFromObject(o) {
				reqs = append(reqs, reconcile.Request{NamespacedName: key})
			}
		}
		return reqs
	})
	claimChanges := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return wantedHost(e.ObjectOld, opts) != wantedHost(e.ObjectNew, opts) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	return b.Watches(&customv1.MicroServiceDeploy{}, othersWantingTheHost, builder.WithPredicates(claimChanges)), nil
}
