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

	"slices"

	"k8s.io/apimachinery/pkg/types"

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

// roundTrip returns the median milliseconds of five reads of a missing
// resource of the workload's kind, under the operator's identity.
func (e *env) roundTrip(ctx context.Context, w workload) (float64, error) {
	c, err := e.operatorClient()
	if err != nil {
		return 0, err
	}
	ms := make([]float64, 5)
	for i := range ms {
		start := time.Now()
		err := c.Get(ctx, types.NamespacedName{Namespace: probeNamespace, Name: "absent"}, w.newObject("", "", 0))
		if !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("read as the operator: %v", err)
		}
		ms[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	slices.Sort(ms)
	return ms[len(ms)/2], nil
}

// probeTimes waits for the probe application name and returns the seconds
// from created until its status observed it, and until it was Ready.
func (e *env) probeTimes(ctx context.Context, tr *tracker, name string, created time.Time) (float64, float64, error) {
	key := probeNamespace + "/" + name
	if err := e.poll(ctx, name+" Ready", func() (bool, string) {
		_, ok := tr.whenReady(key)
		return ok, name + " not Ready"
	}); err != nil {
		return 0, 0, err
	}
	at, _ := tr.when(key)
	readyAt, _ := tr.whenReady(key)
	return at.Sub(created).Seconds(), readyAt.Sub(created).Seconds(), nil
}

// bareProbeTimes reads the seconds from created until the bare probe name's
// status was seen, and its steps from the audit log.
func (e *env) bareProbeTimes(ctx context.Context, tr *tracker, name string, created time.Time, seconds *float64, steps *probeTimeline) (err error) {
	if *seconds, _, err = e.probeTimes(ctx, tr, name, created); err != nil {
		return err
	}
	*steps, err = e.audit.probe(name, created)
	return err
}
