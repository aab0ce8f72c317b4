package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/test/testenv"
)

// writesTo splits the mutating requests of ns into status writes to the
// AppService name, other writes and Events.
func writesTo(muts []string, name string) (status, other, events []string) {
	for _, m := range muts {
		switch {
		case strings.HasSuffix(m, "/appservices/"+name+"/status"):
			status = append(status, m)
		case strings.Contains(m, "/events"):
			events = append(events, m)
		default:
			other = append(other, m)
		}
	}
	return status, other, events
}

func TestAppServiceStatusIsWrittenOnceItsDeploymentIsObserved(t *testing.T) {
	ns, op := startOperator(t)
	app := createAvailableAppService(t, ns)
	dep, _ := children(ns, app.Name)
	op.Mutations.WaitQuiet(t, ns, time.Second, 20*time.Second)
	status, other, events := writesTo(op.Mutations.In(ns), app.Name)
	// Ready from its first status on: no event either.
	if len(status) != 1 || len(events) != 0 || len(other) != 2 {
		t.Fatalf("creating the AppService cost %d status writes, %d events and %d other writes, want 1, 0 and 2 (the Deployment and the Service):\n%s",
			len(status), len(events), len(other), strings.Join(op.Mutations.In(ns), "\n"))
	}

	// One field changed: the Deployment is applied once, and the status
	// written once, when the Deployment controller has observed the change.
	op.Mutations.Reset()
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Spec.Image = "nginx:1.28" })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err.Error()
		}
		return dep.Generation == 2, "the Deployment is not updated yet"
	})
	markAvailable(t, ns, app.Name)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, app)
		return app.Status.ObservedGeneration == app.Generation, "the status does not observe the change yet"
	})
	op.Mutations.WaitQuiet(t, ns, time.Second, 20*time.Second)
	status, other, events = writesTo(op.Mutations.In(ns), app.Name)
	if len(status) != 1 || len(other) != 1 || len(events) != 0 {
		t.Fatalf("changing the image cost %d status writes, %d events and %d other writes, want 1, 0 and 1 (the Deployment):\n%s",
			len(status), len(events), len(other), strings.Join(op.Mutations.In(ns), "\n"))
	}
	if c := readyOf(t, app); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %s (%s: %s) after the rollout, want True", c.Status, c.Reason, c.Message)
	}
}

func TestAppServiceStatusSaysSoWhenTheDeploymentControllerDoesNotAnswer(t *testing.T) {
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, _ := children(ns, app.Name)
	waitForObject(t, dep)
	seen := time.Now()
	// No Deployment controller runs here.
	c := waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	if waited := time.Since(seen); waited < time.Second {
		t.Errorf("the status was written %v after the Deployment appeared, before its controller had a chance to observe it", waited)
	}
	if !strings.Contains(c.Message, "Deployment controller") {
		t.Errorf("Ready message %q does not say what the AppService waits for", c.Message)
	}
}

// busyAndWaiting creates two AppServices in ns, "busy" and the waiting
// one, and returns the waiting one and both Deployments once they exist.
func busyAndWaiting(t *testing.T, ns string) (waiting *appv1.AppService, busyDep, waitingDep *appsv1.Deployment) {
	t.Helper()
	busy := newAppService(t, ns)
	busy.Name = "busy"
	testenv.Create(t, k8s, busy)
	waiting = newAppService(t, ns)
	testenv.Create(t, k8s, waiting)
	busyDep, _ = children(ns, busy.Name)
	waitingDep, _ = children(ns, waiting.Name)
	waitForObject(t, busyDep)
	waitForObject(t, waitingDep)
	return waiting, busyDep, waitingDep
}

func TestAppServiceStatusWaitsLongerWhileTheDeploymentControllerIsBusy(t *testing.T) {
	ns, _ := startOperator(t)
	waiting, busyDep, _ := busyAndWaiting(t, ns)

	// The Deployment controller reports on the other Deployment every
	// second, for twice as long as a silent controller is waited for, and
	// never on this one.
	start := time.Now()
	for i := 0; time.Since(start) < 10*time.Second; i++ {
		if i%2 == 0 {
			markAvailable(t, ns, busyDep.Name)
		} else {
			markObserved(t, ns, busyDep.Name)
		}
		get(t, waiting)
		if len(waiting.Status.Conditions) != 0 {
			t.Fatalf("the status was written %v after the Deployment appeared, while its controller was busy with another one: %v",
				time.Since(start), waiting.Status.Conditions)
		}
		time.Sleep(time.Second)
	}
	// Silent from now on: the status says what it waits for.
	c := waitForCondition(t, waiting, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	if !strings.Contains(c.Message, "Deployment controller") {
		t.Errorf("Ready message %q does not say what the AppService waits for", c.Message)
	}
}

// The Deployment controller working through a backlog longer than a
// minute (a burst of thousands of changed Deployments; docs/performance.md
// has a measured one) keeps the status waiting as long as it keeps reporting on other Deployments, up to
// ten minutes. Time is a fake clock moved on by half a settle time at a
// time, each step once the operator has seen the busy Deployment's new
// report; the waiting AppService's pass is then woken by a report on its
// Deployment that does not observe it.
func TestAppServiceStatusWaitsAsLongAsTheDeploymentControllerWorksThroughABacklog(t *testing.T) {
	const settle = 20 * time.Second
	ns := testenv.NewNamespace(t, k8s)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	op := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{Clock: clk, Settle: settle}})
	waiting, busyDep, waitingDep := busyAndWaiting(t, ns)

	reports := int32(0)
	// report writes a new status of dep, observing its spec or not, and
	// waits for the operator's cache to hold it.
	report := func(dep *appsv1.Deployment, observes bool) {
		t.Helper()
		reports++
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); err != nil {
			t.Fatal(err)
		}
		dep.Status = appsv1.DeploymentStatus{Replicas: reports % 2}
		if observes {
			dep.Status.ObservedGeneration = dep.Generation
		}
		if err := k8s.Status().Update(context.Background(), dep); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, func() (bool, string) {
			cached := &appsv1.Deployment{}
			if err := op.Cache.Get(context.Background(), client.ObjectKeyFromObject(dep), cached); err != nil {
				return false, err.Error()
			}
			return cached.ResourceVersion == dep.ResourceVersion, "the operator has not seen the report yet"
		})
	}
	// busyUntil moves the clock on to d after start, the Deployment
	// controller reporting on the busy Deployment at every step, then has
	// the waiting AppService looked at once.
	start := clk.Now()
	busyUntil := func(d time.Duration) {
		t.Helper()
		for clk.Since(start) < d {
			clk.SetTime(clk.Now().Add(settle / 2))
			report(busyDep, true)
		}
		// The busy AppService's passes over, the next is the waiting one's.
		passes := settledPasses(t, "appservice")
		report(waitingDep, false)
		testenv.Eventually(t, 10*time.Second, func() (bool, string) {
			return reconcileCount(t, "appservice") > passes, "no pass after the report on the waiting Deployment"
		})
	}

	busyUntil(2 * time.Minute)
	get(t, waiting)
	if len(waiting.Status.Conditions) != 0 {
		t.Fatalf("the status was written two minutes after its Deployment appeared while the Deployment controller was busy with another one: %v",
			waiting.Status.Conditions)
	}

	// Past ten minutes the status says what it waits for, busy or not.
	busyUntil(10*time.Minute + settle)
	c := waitForCondition(t, waiting, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	if !strings.Contains(c.Message, "Deployment controller") {
		t.Errorf("Ready message %q does not say what the AppService waits for", c.Message)
	}
}

// settledPasses waits until the named controller has finished no pass for
// a second, and returns how many it has finished.
func settledPasses(t *testing.T, controllerName string) float64 {
	t.Helper()
	last, since := reconcileCount(t, controllerName), time.Now()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if n := reconcileCount(t, controllerName); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= time.Second, fmt.Sprintf("%s keeps passing: %v passes", controllerName, last)
	})
	return last
}

// The controller remembers the answer to its own write to a child until
// the child's informer shows that version or a later one, or a pass reads
// it from the cache, whatever the order in which the answer and the event
// arrive.
func TestEchoesOfOwnWritesAreForgottenOnceShown(t *testing.T) {
	wrote, isEcho, shown, pending := controller.EchoFilter()
	at := func(uid, rv string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), ResourceVersion: rv}}
	}

	// The answer first, then the event.
	wrote(at("a", "20"))
	if isEcho(at("a", "19")) || pending() != 1 {
		t.Errorf("an event from before the write: echo, or the write forgotten (%d pending)", pending())
	}
	if !isEcho(at("a", "20")) || pending() != 0 {
		t.Errorf("the event of the write: not an echo, or the write still remembered (%d pending)", pending())
	}
	if isEcho(at("a", "20")) {
		t.Error("the same version again is an echo: only the first is")
	}

	// The event of the write never seen, a later one is: forgotten.
	wrote(at("b", "30"))
	if isEcho(at("b", "31")) || pending() != 0 {
		t.Errorf("a later version: echo, or the write still remembered (%d pending)", pending())
	}

	// The event first, then the answer: the next pass reading the child
	// from the cache forgets it; reading an older version does not.
	wrote(at("c", "40"))
	shown(at("c", "39"))
	if pending() != 1 {
		t.Errorf("a pass read a version older than the write, and the write is forgotten (%d pending)", pending())
	}
	shown(at("c", "40"))
	if pending() != 0 {
		t.Errorf("a pass read the version written, and the write is still remembered (%d pending)", pending())
	}
}

// markAvailable must stamp the generation the operator ends up writing: a
// MicroServiceDeploy that autoscales creates its Deployment without a
// replica count and sets the count in a second write. Stamping the first
// generation leaves the second unobserved, and with no Deployment
// controller in these tests nothing ever observes it.
func TestMarkAvailableStampsTheGenerationWithTheReplicaCount(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	// Both writes are applies, as the operator's are: a create by update
	// would own the defaulted count.
	d := plainDeployment(ns, "two-writes", map[string]string{"app": "two-writes"}, "nginx")
	d.Spec.Replicas = nil
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	body, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(body []byte, manager string) error {
		return k8s.Patch(context.Background(), d.DeepCopy(), client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(manager), client.ForceOwnership)
	}
	if err := apply(body, "creator"); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		second <- apply([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`), "handover")
	}()
	markAvailable(t, ns, d.Name)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	get(t, d)
	if d.Generation != 2 || d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != 3 {
		t.Errorf("generation %d, status observed %d with %d available; want generation 2 observed with 3 available",
			d.Generation, d.Status.ObservedGeneration, d.Status.AvailableReplicas)
	}
}
