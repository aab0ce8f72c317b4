package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// The manager's leader-election defaults (see cmd/app-operator), which
// this scenario runs with.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	leaseName     = "app-operator.app.example.com"
	// leaderJitter is client-go's: a standby waits between one and
	// 1+leaderJitter retry periods between two attempts on the Lease.
	leaderJitter = 1.2
	// idleTakeoverBound is client-go's bound on a takeover, from the kill:
	// the lease duration and two of the standby's longest waits.
	idleTakeoverBound = leaseDuration + time.Duration(2*(1+leaderJitter)*float64(retryPeriod))
)

// tenure is the time one process may write: from when it took the Lease
// to when it was killed.
type tenure struct {
	p        *proxy
	from, to time.Time
}

// TestLeaderFailover runs two operator processes with leader election and
// kills the leader (SIGKILL: it cannot release the Lease) while a resource
// keeps changing, twice: a, then b once a came back as the standby. Each
// time the other takes over, and at no moment do two processes write:
// every write of each goes through its own proxy, which records when it
// arrived, and each falls within a time its process held the Lease.
func TestLeaderFailover(t *testing.T) {
	t.Parallel()
	scenario(t, famFailover)
	c := newClient(t)
	ns := namespace(t, c)
	logs := t.TempDir()
	args := managerArgs(ns, "--leader-elect", "--leader-election-namespace="+ns)
	pa, pb := newProxy(t, "operator-a"), newProxy(t, "operator-b")
	ctx := context.Background()
	lease := &coordinationv1.Lease{}
	readLease := func() (string, bool) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return "", false
		}
		return *lease.Spec.HolderIdentity, true
	}
	procs := map[*proxy]*testenv.ManagerProcess{}
	// starts counts each process's starts: they share one log.
	starts := map[*proxy]int{}
	start := func(p *proxy) {
		procs[p] = startManager(t, p, logs, args...)
		starts[p]++
	}
	start(pa)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_, ok := readLease()
		return ok, "no leader yet"
	})
	leader, standby := pa, pb
	holder, _ := readLease()
	standbySince := time.Now()
	start(pb)
	tenures := []tenure{{p: pa}}

	crs := convergeSamples(t, c, ns, famFailover)

	// Keep the leader busy: the AppService's image changes every 500 ms,
	// across the kills, so that whoever leads has children to update.
	app := crs[0].(*appv1.AppService)
	changer := newLoops()
	changer.every(500*time.Millisecond, func(i int) {
		patch := fmt.Sprintf(`{"spec":{"image":"nginx:1.%d"}}`, 20+i%2)
		_ = c.Patch(ctx, app.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	defer changer.stop()

	var figures []string
	for round := 1; round <= 2; round++ {
		time.Sleep(3 * time.Second)
		if w := firstAfter(standby.Writes(work), standbySince); w != nil {
			t.Fatalf("round %d: the standby %s has written while %s led: %s", round, standby.name, leader.name, w)
		}
		// The standby must be contending before the leader dies, or the
		// takeover would also count the time a loaded machine took to start it.
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			b, _ := os.ReadFile(procs[standby].Log)
			return bytes.Count(b, []byte("Attempting to acquire leader lease")) == starts[standby], standby.name + " has not started contending for the Lease"
		})
		killed := time.Now()
		procs[leader].Kill()
		tenures[len(tenures)-1].to = killed
		// client-go bounds the takeover, from the kill, by the lease duration
		// and two of the standby's waits between attempts (each one to
		// 1+leaderJitter retry periods) on an idle machine; on a loaded one a
		// takeover only has to happen, so the wait for it is generous, and the
		// figure is reported, not asserted.
		testenv.Eventually(t, 4*leaseDuration, func() (bool, string) {
			h, ok := readLease()
			return ok && h != holder, fmt.Sprintf("the Lease is still held by %s", holder)
		})
		holder, _ = readLease()
		// The new leader stamps the Lease when it takes it: that, not when
		// this test noticed, is the takeover.
		acquired := lease.Spec.AcquireTime.Time
		takeover := acquired.Sub(killed)
		tenures = append(tenures, tenure{p: standby, from: acquired})
		figures = append(figures, fmt.Sprintf("%.2fs", takeover.Seconds()))
		t.Logf("round %d: %s killed at %s, %s took the Lease at %s (%s later)", round, leader.name,
			killed.Format("15:04:05.000"), standby.name, acquired.Format("15:04:05.000"), takeover.Round(time.Millisecond))

		// The killed one comes back, as the standby.
		leader, standby = standby, leader
		standbySince = time.Now()
		start(standby)
		time.Sleep(3 * time.Second)
		checkInvariants(t, c, ns)
		if first := firstAfter(leader.Writes(work), acquired); first == nil {
			t.Errorf("round %d: the new leader %s made no write: the failover was not exercised", round, leader.name)
		}
	}
	changer.stop()
	took := waitConverged(t, c, ns, famFailover, 2*time.Minute)
	waitQuiet(t, leader, ns, 3*time.Second, time.Minute)

	// Every write falls within its process's tenure; tenures do not
	// overlap (each begins after the previous leader was killed), so no
	// two processes ever wrote at once.
	var outside []string
	writes := map[string]int{}
	for _, p := range []*proxy{pa, pb} {
		for _, w := range p.Writes(work) {
			writes[p.name]++
			ok := false
			for _, te := range tenures {
				ok = ok || (te.p == p && !w.at.Before(te.from) && (te.to.IsZero() || w.at.Before(te.to)))
			}
			if !ok {
				outside = append(outside, p.name+" "+w.String())
			}
		}
	}
	if len(outside) > 0 {
		t.Errorf("writes outside their process's time as leader: %v", outside)
	}
	for i := 1; i < len(tenures); i++ {
		if tenures[i].from.Before(tenures[i-1].to) {
			t.Errorf("%s took the Lease before %s was killed", tenures[i].p.name, tenures[i-1].p.name)
		}
	}
	timing("leader failover: 2 SIGKILLs of the leader; the standby took the Lease %s after the kill (lease %s + retry %s: client-go's bound on an idle machine is %s); writes operator-a %d, operator-b %d, by a process not holding the Lease %d; converged %.1fs after",
		strings.Join(figures, " and "), leaseDuration, retryPeriod, idleTakeoverBound, writes["operator-a"], writes["operator-b"], len(outside), took.Seconds())
}

// firstAfter returns the first write at or after since, or nil.
func firstAfter(ws []write, since time.Time) *write {
	for i := range ws {
		if !ws[i].at.Before(since) {
			return &ws[i]
		}
	}
	return nil
}
