package realpods

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// killPoint kills an operator right after the nth command it sends that
// changes a node (REPLICAOF, FAILOVER, CLIENT PAUSE and UNPAUSE, SCRIPT
// KILL) has taken effect, before the operator hears the answer, as a
// SIGKILL there would: nothing it would write next, to record or finish
// its step, lands. It counts from Arm on.
type killPoint struct {
	n    int
	kill func()
	// fired is closed once the operator is killed.
	fired chan struct{}

	mu       sync.Mutex
	armed    bool
	commands []string
	// last is the nth command, without the node's address.
	last string
}

func newKillPoint(n int) *killPoint { return &killPoint{n: n, fired: make(chan struct{})} }

// Arm starts the count.
func (k *killPoint) Arm() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.armed = true
}

// Commands returns the commands counted, in order.
func (k *killPoint) Commands() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.commands...)
}

// Last returns the command after which the operator was killed, without
// the node's address.
func (k *killPoint) Last() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

// errKilled is what the command that killed the operator returns to it.
var errKilled = errors.New("the operator was killed after this command")

// sent counts a command sent to the node at addr that took effect (err
// nil) and kills the operator when it is the nth; it returns what the
// operator then hears.
func (k *killPoint) sent(command, addr string, err error) error {
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.armed || len(k.commands) >= k.n {
		return err
	}
	k.commands = append(k.commands, command+" to "+addr)
	if len(k.commands) < k.n {
		return nil
	}
	k.last = command
	k.kill()
	close(k.fired)
	return errKilled
}

// Nodes is the operator's RedisNodes option: the real client, counted.
func (k *killPoint) Nodes(password string, cfg *tls.Config, plain map[string]bool) redisnode.Nodes {
	return killingNodes{Nodes: redisnode.Client{Password: password, TLS: cfg, Plain: plain}, k: k}
}

// killingNodes sends every command through the real client and counts
// those that change a node.
type killingNodes struct {
	redisnode.Nodes
	k *killPoint
}

func (n killingNodes) Promote(ctx context.Context, addr string) error {
	return n.k.sent("REPLICAOF NO ONE", addr, n.Nodes.Promote(ctx, addr))
}

func (n killingNodes) Follow(ctx context.Context, addr, host string, port int) error {
	return n.k.sent("REPLICAOF <primary>", fmt.Sprintf("%s (of %s)", addr, host), n.Nodes.Follow(ctx, addr, host, port))
}

func (n killingNodes) Failover(ctx context.Context, addr, toHost string, toPort int, timeout time.Duration) error {
	return n.k.sent("FAILOVER TO <replica>", fmt.Sprintf("%s (to %s)", addr, toHost), n.Nodes.Failover(ctx, addr, toHost, toPort, timeout))
}

func (n killingNodes) PauseWrites(ctx context.Context, addr string, d time.Duration) error {
	return n.k.sent("CLIENT PAUSE", addr, n.Nodes.PauseWrites(ctx, addr, d))
}

func (n killingNodes) Unpause(ctx context.Context, addr string) error {
	return n.k.sent("CLIENT UNPAUSE", addr, n.Nodes.Unpause(ctx, addr))
}

func (n killingNodes) KillScript(ctx context.Context, addr string) error {
	return n.k.sent("SCRIPT KILL", addr, n.Nodes.KillScript(ctx, addr))
}

// The operator killed inside a step, on real pods, while a client writes
// (persistence on): right after the first, then the second command of a
// failover (the primary's pod deleted) has taken effect, and right after
// the FAILOVER TO of a handover (a changed template rolls the nodes, the
// primary last). Nothing the killed operator would have written next
// lands; a new operator, which knows only what the status and the nodes
// say, finishes or undoes the step: the cluster ends Running, with one
// primary, the one the status records, every other node its replica,
// taking writes, and no acknowledged write lost.
func TestRedisFaultOperatorKilledInsideAStep(t *testing.T) {
	for _, tc := range []struct {
		name, step string
		after      int
	}{
		{"failover-1", "failover", 1},
		{"failover-2", "failover", 2},
		{"handover-1", "handover", 1},
	} {
		t.Run(tc.name, func(t *testing.T) { operatorKilledInside(t, tc.name, tc.step, tc.after) })
	}
}

func operatorKilledInside(t *testing.T, name, step string, after int) {
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	k := newKillPoint(after)
	opts := cellOperatorOptions(ns)
	opts.RedisNodes = k.Nodes
	op := startOperator(t, opts)
	k.kill = op.Kill
	r := newRedisCell(t, c, ns, name, true, 3)
	primary := r.rec.Status.Primary

	w := r.startWriterWaiting(name, 1, cellWritePause)
	waitWrites(t, w, 200)
	k.Arm()
	switch step {
	case "failover":
		if err := c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primary}}); err != nil {
			t.Fatal(err)
		}
	case "handover":
		// A new template rolls every node, the primary last, after a
		// handover to a replica already rolled.
		testenv.Update(t, c, r.rec, func(rec *redisv1alpha1.RedisEnterpriseCluster) {
			rec.Spec.RedisEnterpriseNodeResources.Requests[corev1.ResourceCPU] = redisv1alpha1.Quantity{IntOrString: intstr.FromString("11m")}
		})
	}
	faulted := time.Now()
	select {
	case <-k.fired:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the operator sent %v within 5 min of the %s, not %d command(s)", k.Commands(), step, after)
	}
	op.Stop()
	t.Logf("the operator killed %v into the %s, right after %v", time.Since(faulted).Round(time.Millisecond), step, k.Commands())

	back := time.Now()
	startOperator(t, cellOperatorOptions(ns))
	primary = r.waitRunning(5 * time.Minute)
	if step == "handover" {
		// The roll goes on to its end.
		testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
			r.refresh()
			return r.rec.Status.State == redisv1alpha1.StateRunning && r.rec.Status.ObservedGeneration == r.rec.Generation && r.allPodsCurrent(),
				fmt.Sprintf("state %s, observed generation %d of %d", r.rec.Status.State, r.rec.Status.ObservedGeneration, r.rec.Generation)
		})
		primary = r.waitRunning(time.Minute)
	}
	toReady := time.Since(back)
	acked, lost := r.finish(w, fmt.Sprintf("the operator killed right after command %d of a %s (%s), a new operator started", after, step, k.Last()), toReady)
	t.Logf("the primary is %s, Running %v after the new operator started; %d writes acknowledged, %d lost", primary, toReady.Round(time.Millisecond), acked, lost)
}

// allPodsCurrent reports whether every node's pod runs the StatefulSet's
// current revision.
func (r *redisCluster) allPodsCurrent() bool {
	pods := &corev1.PodList{}
	if err := r.c.List(context.Background(), pods, client.InNamespace(r.rec.Namespace), client.MatchingLabels(redisenterprisecluster.Selector(r.rec.Name))); err != nil {
		return false
	}
	revisions := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			return false
		}
		revisions[p.Labels["controller-revision-hash"]] = true
	}
	return len(revisions) == 1
}
