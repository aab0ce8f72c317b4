package realpods

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
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
	testenv.StartOperator(t, testCluster.Config(), cellOperatorOptions(ns))

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
			labels := rec.Selector("twice")
			labels[rec.RoleLabel] = redisv1alpha1.RolePrimary
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
	freezePod(t, c, ns, primary)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		r.refresh()
		return r.rec.Status.Primary != primary, "the primary is still " + r.rec.Status.Primary
	})
	waitWrites(t, w, 50)
	thawPod(t, c, ns, primary)
	thawed := time.Now()
	newPrimary := r.waitRunning(2 * time.Minute)
	toReady := time.Since(thawed)
	close(stop)
	sampled.Wait()
	if most > 1 {
		t.Errorf("%d pods carried the primary's label at once: %v", most, seen)
	}
	info, err := r.replication(primary)
	if err != nil || info["role"] != "slave" || !strings.HasPrefix(info["master_host"], newPrimary+".") {
		t.Errorf("the old primary %s, thawed: role %s of %s (%v); want a replica of %s", primary, info["role"], info["master_host"], err, newPrimary)
	}
	r.finish(w, "two managers without leader election, the primary frozen past the window", toReady)
}
