package realpods

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// Two managers watch one cluster without leader election (two installs,
// or a manager run by hand beside an installed one), and the primary is
// frozen for longer than the failover window: both see it fail and both
// decide a failover, but only the one whose claim in the status lands
// acts. At no moment do two pods carry the primary's label, and no
// acknowledged write is lost.
func TestRedisFaultTwoManagersWithoutLeaderElection(t *testing.T) {
	c, _, r := startCell(t, "twice", false)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary
	startOperator(t, cellOperatorOptions(ns))

	// Count the pods labelled primary, the Services' selector, throughout.
	stop, sampled := make(chan struct{}), &sync.WaitGroup{}
	var most int
	var seen []string
	sampled.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			pods := &corev1.PodList{}
			labels := redisenterprisecluster.Selector("twice")
			labels[redisenterprisecluster.RoleLabel] = redisv1alpha1.RolePrimary
			if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
				continue
			}
			if len(pods.Items) > most {
				most, seen = len(pods.Items), nil
				for _, p := range pods.Items {
					seen = append(seen, p.Name)
				}
			}
		}
	})

	w := r.startWriterWaiting("twice", 1, cellWritePause)
	waitWrites(t, w, 200)
	_, toReady := r.freezePastTheWindow(w, primary)
	close(stop)
	sampled.Wait()
	if most > 1 {
		t.Errorf("%d pods carried the primary's label at once: %v", most, seen)
	}
	r.finish(w, "two managers without leader election, the primary frozen past the window", toReady)
}
