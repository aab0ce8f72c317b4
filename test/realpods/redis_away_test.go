package realpods

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The operator away while pods other than the primary's alone are
// deleted: the cells of the matrix next to the primary's pod deleted
// (TestRedisFaultPrimaryRestartsEmptyWhileTheOperatorIsAway).

// deletePodsAndWait deletes the named pods of r and waits until each is
// back, a new pod, and ready.
func (r *redisCluster) deletePodsAndWait(names ...string) {
	r.t.Helper()
	ctx, ns := context.Background(), r.rec.Namespace
	old := map[string]types.UID{}
	for _, name := range names {
		old[name] = r.podUID(name)
		if err := r.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			r.t.Fatal(err)
		}
	}
	for _, name := range names {
		testenv.Eventually(r.t, 2*time.Minute, func() (bool, string) {
			pod := &corev1.Pod{}
			if err := r.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
				return false, err.Error()
			}
			return pod.UID != old[name] && podReady(pod), fmt.Sprintf("pod %s: uid %s, ready %v", name, pod.UID, podReady(pod))
		})
	}
}

// With persistence off and the operator stopped, a replica's pod deleted:
// it comes back empty, follows the primary its role file names, and
// resynchronises from it on its own; writes acknowledged by both replicas
// go on once it has, and nothing changes when the operator is back.
func TestRedisFaultReplicaRestartsEmptyWhileTheOperatorIsAway(t *testing.T) {
	_, op, r := startCell(t, "replica", false)
	primary := r.rec.Status.Primary
	replica := ""
	for _, n := range r.rec.Status.Nodes {
		if n.Name != primary {
			replica = n.Name
			break
		}
	}
	w := r.startWriterWaiting("replica", 2, cellWritePause)
	waitWrites(t, w, 200)
	op.Stop()
	r.deletePodsAndWait(replica)
	// Writes acknowledged by both replicas again: the empty replica has
	// caught up with the primary without the operator.
	waitWrites(t, w, 100)
	back := time.Now()
	startOperator(t, cellOperatorOptions(r.rec.Namespace))
	if got := r.waitRunning(2 * time.Minute); got != primary {
		t.Errorf("the primary moved from %s to %s after a replica restarted", primary, got)
	}
	acked, lost := r.finish(w, "persistence off, operator away, a replica's pod deleted (it comes back empty)", time.Since(back))
	t.Logf("replica %s came back empty with the operator away; %d writes acknowledged (WAIT 2), %d lost", replica, acked, lost)
}

// With persistence on and the operator stopped, every pod deleted at once:
// each node comes back from its own data as a replica, so none takes a
// write, and none resynchronises from another, until the operator is back
// and promotes the node furthest along; every acknowledged write is still
// there.
func TestRedisFaultEveryPodRestartsWhileTheOperatorIsAway(t *testing.T) {
	_, op, r := startCell(t, "everypod", true)
	w := r.startWriterWaiting("everypod", 1, cellWritePause)
	waitWrites(t, w, 300)
	op.Stop()
	names := make([]string, 0, len(r.rec.Status.Nodes))
	for _, n := range r.rec.Status.Nodes {
		names = append(names, n.Name)
	}
	r.deletePodsAndWait(names...)
	r.logLineage(names...)
	time.Sleep(5 * time.Second)
	for _, name := range names {
		info, err := r.replication(name)
		if err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		if info["role"] == "master" {
			t.Errorf("with the operator away, %s came back a primary (every node should boot a replica)", name)
		}
	}
	back := time.Now()
	startOperator(t, cellOperatorOptions(r.rec.Namespace))
	// The status still says what it said before the operator left: Ready
	// is when writes are acknowledged again and the status says Running.
	waitWrites(t, w, 1)
	r.waitRunning(3 * time.Minute)
	acked, lost := r.finish(w, "persistence on, operator away, every pod deleted", time.Since(back))
	t.Logf("every pod restarted with the operator away; %s is the primary; %d writes acknowledged (WAIT 1), %d lost", r.rec.Status.Primary, acked, lost)
}

// With persistence on and the operator running, a replica cut off from the
// primary for 25 s while the other acknowledges overwrites, deletes and
// increments, then every pod deleted at once while the cut still holds:
// the stale replica holds keys the others deleted, and values many writes
// old. Each node persisted how far it got when it stopped; the operator
// elects a node that got furthest, and every key ends at a value its
// acknowledged history allows. The stale replica is elected only once it
// has caught up: its new pod, no longer cut off, may sync in full from the
// old primary while that one, terminating, waits for its replicas
// (Redis's shutdown-timeout); then its live position is the furthest.
func TestRedisFaultEveryPodRestartsAfterAReplicaMissedDeletes(t *testing.T) {
	c, _, r := startCell(t, "stale", true)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary
	replicas := r.replicas()
	stale := replicas[0]
	w := r.startWriterWaiting("stale", 1, cellWritePause)
	waitWrites(t, w, 200)
	cutPodFrom(t, c, ns, stale, r.podIP(primary))
	before := w.Acked()
	time.Sleep(25 * time.Second)
	if w.Acked() == before {
		t.Fatalf("no write acknowledged with %s cut off: the other replica should acknowledge them", stale)
	}
	names := make([]string, 0, len(r.rec.Status.Nodes))
	for _, n := range r.rec.Status.Nodes {
		names = append(names, n.Name)
	}
	deleted := time.Now()
	r.deletePodsAndWait(names...)
	lineage := r.logLineage(names...)
	got := r.waitRunning(3 * time.Minute)
	if got == stale {
		// Elected from a position at least as far as what every other
		// node's data held when its pod started.
		note := r.eventNote("promoted " + stale + " (")
		m := regexp.MustCompile(`promoted \S+ \(offset (\d+) of (\w+) \((\w+)\)\)`).FindStringSubmatch(note)
		if m == nil || m[3] != redisenterprisecluster.SourceLive {
			t.Errorf("the replica %s, cut off before every pod restarted, was elected (%q), not from a live position", stale, note)
		} else {
			offset, _ := strconv.ParseInt(m[1], 10, 64)
			for name, l := range lineage {
				if name != stale && l.Known && strings.HasPrefix(l.ReplicationID, m[2]) && l.Offset > offset {
					t.Errorf("the replica %s was elected at offset %d, behind %s's %d (%q)", stale, offset, name, l.Offset, note)
				}
			}
			t.Logf("the replica %s caught up before it was elected: %s", stale, note)
		}
	}
	acked, lost := r.finish(w, "persistence on, a replica cut off for 25 s, then every pod deleted", time.Since(deleted))
	t.Logf("%s cut off from %s for 25 s, then every pod deleted: %s elected; %d operations acknowledged (WAIT 1), %d keys lost", stale, primary, got, acked, lost)
}

// With persistence on and the operator running, a replica cut off from the
// primary for 20 s while the other acknowledges overwrites, deletes and
// increments, then the primary's pod and that other replica's deleted
// together, the cut replica left running: it answers at once, with a live
// position many writes behind, while the two that hold every acknowledged
// write are still starting. The operator must not elect the node that
// answers first: it elects one of the two, once one answers with its
// position (every acknowledged write is on the primary and the replica
// that acknowledged it).
func TestRedisFaultPrimaryAndItsAcknowledgingReplicaRestartTogether(t *testing.T) {
	c, _, r := startCell(t, "pair", true)
	ns, primary := r.rec.Namespace, r.rec.Status.Primary
	replicas := r.replicas()
	stale, acking := replicas[0], replicas[1]
	w := r.startWriterWaiting("pair", 1, cellWritePause)
	waitWrites(t, w, 200)
	cutPodFrom(t, c, ns, stale, r.podIP(primary))
	before := w.Acked()
	time.Sleep(20 * time.Second)
	if w.Acked() == before {
		t.Fatalf("no write acknowledged with %s cut off: %s should acknowledge them", stale, acking)
	}
	deleted := time.Now()
	r.deletePodsAndWait(primary, acking)
	r.logLineage(primary, acking)
	got := r.waitRunning(3 * time.Minute)
	if got == stale {
		t.Errorf("the replica %s, cut off while the others acknowledged writes, was elected: %q", stale, r.eventNote("promoted "+stale))
	}
	acked, lost := r.finish(w, "persistence on, a replica cut off for 20 s, then the primary and the other replica deleted together", time.Since(deleted))
	t.Logf("%s cut off from %s for 20 s, then %s and %s deleted: %s elected; %d operations acknowledged (WAIT 1), %d keys lost", stale, primary, primary, acking, got, acked, lost)
}

// logLineage logs, and returns, what each named pod's lineage container
// read of its data folder when the pod started.
func (r *redisCluster) logLineage(names ...string) map[string]redisbackup.Lineage {
	read := map[string]redisbackup.Lineage{}
	for _, name := range names {
		pod := &corev1.Pod{}
		if err := r.c.Get(context.Background(), client.ObjectKey{Namespace: r.rec.Namespace, Name: name}, pod); err != nil {
			r.t.Logf("pod %s: %v", name, err)
			continue
		}
		for _, s := range pod.Status.InitContainerStatuses {
			if s.Name == redisbackup.LineageContainerName && s.State.Terminated != nil {
				r.t.Logf("pod %s started from: %s", name, strings.TrimSpace(s.State.Terminated.Message))
				if l, err := redisbackup.ParseLineage(s.State.Terminated.Message); err == nil {
					read[name] = l
				}
			}
		}
	}
	return read
}

// eventNote is the note of the newest event about the cluster whose note
// holds text; empty when there is none.
func (r *redisCluster) eventNote(text string) string {
	events := &eventsv1.EventList{}
	if err := r.c.List(context.Background(), events, client.InNamespace(r.rec.Namespace)); err != nil {
		r.t.Fatal(err)
	}
	var note string
	var at time.Time
	for _, e := range events.Items {
		when := e.CreationTimestamp.Time
		if e.Regarding.Name == r.rec.Name && strings.Contains(e.Note, text) && !when.Before(at) {
			note, at = e.Note, when
		}
	}
	return note
}
