package etcd

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// hibernateRecheck is how soon a hibernating cluster whose pods still
// stop is looked at again.
const hibernateRecheck = 2 * time.Second

// hibernationStep is the step of a cluster whose spec.hibernate is true:
// none. No member is added, removed or promoted, and no leadership
// moves, while pods stop or are gone: the members stay in etcd's member
// list and restart from their data when the cluster wakes. A step taken
// before finished within its own pass; the ones after it (the rest of a
// scale or an upgrade) are held until the wake, when the planner decides
// again from what etcd reports.
func hibernationStep(pods int) engine.Step {
	if pods > 0 {
		return engine.Step{Waiting: fmt.Sprintf("Hibernating: waiting for %d pods to stop", pods), RequeueAfter: hibernateRecheck}
	}
	return engine.Step{RequeueAfter: etcdRecheck}
}

// countPods counts the member pods of o, terminating or not.
func (e *etcdOps) countPods(ctx context.Context, o *etcdv1beta2.EtcdCluster) (int, error) {
	pods := &corev1.PodList{}
	if err := e.client.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels(resources.Labels(etcdcluster.Selector(o.Name)))); err != nil {
		return 0, fmt.Errorf("list pods: %w", err)
	}
	return len(pods.Items), nil
}
