package chaos

import (
	"math/rand/v2"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
)

const (
	// killResources is how many resources the operator converges while it
	// is killed.
	killResources = 100
	// killRounds is how many times it is killed.
	killRounds = 5
	// killConvergeWait is how long the resources have to converge after
	// the last restart: far above what a converge takes on a busy shared
	// machine (docs/reliability.md has the measured times).
	killConvergeWait = 4 * time.Minute
)

// TestKillMidWork kills the operator process (SIGKILL) at random moments
// while it converges 100 resources, restarting it each time, and checks
// that the end state is the one it reaches without faults: every child
// there, none twice, none orphaned, every resource Ready.
//
// The MyWebs among them converge before the first kill and live through
// the others. A Service create the kill cuts short can leave its node
// port allocated to no Service, and a MyWeb names its node port: it would
// report NodePortAllocated (and be retried, as TestUnsatisfiableSpecs
// checks) until the API server's repair frees the port: it does on the
// third of its passes that finds the port held by no Service, and they
// run three minutes apart: a wait of up to nine minutes that tells
// nothing about the operator.
func TestKillMidWork(t *testing.T) {
	t.Parallel()
	scenario(t, famKill)
	m := startManaged(t)
	c, ns, p := m.c, m.ns, m.p

	var fixedPorts, others []client.Object
	for _, o := range manyResources(t, ns, killResources) {
		if _, ok := o.(*operatorv1.MyWeb); ok {
			fixedPorts = append(fixedPorts, o)
		} else {
			others = append(others, o)
		}
	}
	create(t, c, fixedPorts...)
	waitConverged(t, c, ns, famKill, 3*time.Minute)

	start := time.Now()
	create(t, c, others...)
	var kills []string
	for round := 1; round <= killRounds; round++ {
		time.Sleep(time.Duration(500+rand.IntN(2500)) * time.Millisecond)
		writes := len(p.Writes(work))
		m.op.Kill()
		kills = append(kills, time.Since(start).Round(100*time.Millisecond).String())
		t.Logf("round %d: killed at %s after %d writes", round, kills[len(kills)-1], writes)
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		m.restart(t)
		checkInvariants(t, c, ns)
	}
	took := waitConverged(t, c, ns, famKill, killConvergeWait)
	waitQuiet(t, p, ns, 3*time.Second, time.Minute)
	waitConverged(t, c, ns, famKill, time.Minute)
	if exited, err := m.op.Exited(); exited {
		t.Errorf("the operator exited by itself: %v", err)
	}
	timing("kill mid-work: %d resources, killed %d times (at %v), converged %.1fs after the last restart (%.1fs in all), %d writes",
		killResources, killRounds, kills, took.Seconds(), time.Since(start).Seconds(), len(p.Writes(work)))
}
