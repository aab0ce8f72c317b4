package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/testenv"
)

// bareProbe does for the new application obj, as soon as it is created,
// the least that makes it Ready, with nothing between the steps: it applies
// obj's children, waits for the Deployment controller to report obj's
// Deployment rolled out at its generation (what the operator's status
// waits for), and writes obj's status. No watch has to tell it of obj and
// no queue holds it: its time is the floor of the operator's probe, on the
// same cluster under the same load.
func bareProbe(ctx context.Context, c client.WithWatch, w workload, obj client.Object) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// Watching before the first apply, so that no report is missed.
	wi, err := c.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(obj.GetNamespace()))
	if err != nil {
		return err
	}
	defer wi.Stop()
	var writes atomic.Int64
	if err := applyChildren(ctx, c, w, obj, &writes); err != nil {
		return err
	}
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			return apierrors.FromObject(ev.Object)
		}
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok || !metav1.IsControlledBy(d, obj) {
			continue
		}
		if done, _ := testenv.RolledOut(d); done {
			return writeReady(ctx, c, obj, &writes)
		}
	}
	return fmt.Errorf("no rollout reported for the Deployment of %s/%s: %w", obj.GetNamespace(), obj.GetName(), ctx.Err())
}

// runBareProbe creates the probe application name as the administrator and
// serves it with bareProbe under the operator's identity. It returns when
// the probe was created.
func (e *env) runBareProbe(ctx context.Context, w workload, name string) (time.Time, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return time.Time{}, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		return time.Time{}, err
	}
	obj := w.newObject(probeNamespace, name, 0)
	created := time.Now()
	if err := e.admin.Create(ctx, obj); err != nil {
		return time.Time{}, err
	}
	return created, bareProbe(ctx, c, w, obj)
}
