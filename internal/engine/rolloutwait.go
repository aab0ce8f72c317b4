package engine

import (
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// DefaultSettle is how long a status write waits for a silent Deployment
// controller to observe a Deployment's new spec (see rolloutWait).
const DefaultSettle = 5 * time.Second

// settleMax bounds the wait while the Deployment controller is busy with
// other Deployments.
const settleMax = 10 * time.Minute

// rolloutWait holds back a status write until the Deployment controller has
// observed a child Deployment's new spec: written before, the status would
// only say "waiting for the Deployment controller" for a few milliseconds
// and be followed at once by the one that reports the rollout, two writes
// where one does.
//
// The wait lasts up to settle, and goes on up to settleMax while that
// controller keeps reporting on other Deployments (it is behind, working
// through a burst of changes). Should it be silent (down), the status says
// so after settle, and the wait does not start again until the Deployment
// is observed. Meanwhile the resource's observedGeneration stays behind
// its generation, which tells readers the change is in progress.
type rolloutWait struct {
	clock  clock.PassiveClock
	settle time.Duration
	since  sync.Map // client.ObjectKey -> time.Time the wait started
	// answered is when the Deployment controller last reported on one of
	// the kind's Deployments, in Unix nanoseconds.
	answered atomic.Int64
}

// Remaining returns how much longer the status write of the resource key
// may wait, given the children of its pass; 0 to write it now.
func (w *rolloutWait) Remaining(key client.ObjectKey, children Observed) time.Duration {
	if !awaitingDeploymentController(children) {
		w.since.Delete(key)
		return 0
	}
	now := w.clock.Now()
	v, _ := w.since.LoadOrStore(key, now)
	waited := now.Sub(v.(time.Time))
	wait := w.settle - waited
	if sinceAnswer := w.settle - now.Sub(time.Unix(0, w.answered.Load())); sinceAnswer > wait {
		wait = min(sinceAnswer, settleMax-waited)
	}
	return max(wait, 0)
}

// Forget forgets the resource key (deleted).
func (w *rolloutWait) Forget(key client.ObjectKey) { w.since.Delete(key) }

// recordAnswers is the predicate on the kind's Deployments that records
// when their controller last reported on one. It lets every event through.
func (w *rolloutWait) recordAnswers() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok := e.ObjectOld.(*appsv1.Deployment)
		cur, ok2 := e.ObjectNew.(*appsv1.Deployment)
		if ok && ok2 && !equality.Semantic.DeepEqual(old.Status, cur.Status) {
			w.answered.Store(w.clock.Now().UnixNano())
		}
		return true
	}}
}

// awaitingDeploymentController reports whether a Deployment among the
// observed objects has a spec its controller has not observed yet.
func awaitingDeploymentController(children Observed) bool {
	for _, o := range children {
		if d, ok := o.(*appsv1.Deployment); ok && d.Status.ObservedGeneration < d.Generation {
			return true
		}
	}
	return false
}
