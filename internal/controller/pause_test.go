package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// setPaused sets or removes the pause annotation of obj.
func setPaused[T client.Object](t *testing.T, obj T, paused bool) {
	t.Helper()
	testenv.Update(t, k8s, obj, func(o T) {
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if paused {
			a[conditions.PausedAnnotation] = "true"
		} else {
			delete(a, conditions.PausedAnnotation)
		}
		o.SetAnnotations(a)
	})
}

// progressingReason is the reason of obj's Progressing condition.
func progressingReason(obj conditionsOf) string {
	if c := meta.FindStatusCondition(obj.GetConditions(), conditions.Progressing); c != nil {
		return c.Reason
	}
	return ""
}

// countingClient is a client whose mutating requests m records.
func countingClient(t *testing.T) (client.Client, *testenv.Mutations) {
	t.Helper()
	m := &testenv.Mutations{}
	c, err := client.New(m.Wrap(testCluster.Config()), client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// onlyStatusOf fails the test on a mutating request other than a status
// write to the resource at path (e.g. "appservices/a").
func onlyStatusOf(t *testing.T, muts []string, path string) {
	t.Helper()
	var other []string
	for _, m := range muts {
		if !strings.HasSuffix(m, "/"+path+"/status") && !strings.Contains(m, "/events") {
			other = append(other, m)
		}
	}
	if len(other) != 0 {
		t.Fatalf("while paused the operator made %d requests beyond its status, want none:\n%s", len(other), strings.Join(other, "\n"))
	}
}

// drainEvents returns the events recorder has received so far.
func drainEvents(recorder *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(evs []string, reason string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, corev1.EventTypeNormal+" "+reason+" ") {
			return true
		}
	}
	return false
}

// A paused AppService: a new image is not applied and a deleted Service is
// not made again, the operator writing nothing but the status, which says
// Paused and keeps the generation it last observed; once the annotation
// is removed, the image rolls out and the Service is back.
func TestPausedAppServiceAppliesNothingUntilResumed(t *testing.T) {
	ctx := context.Background()
	ns, op := startOperator(t)
	app := createAvailableAppService(t, ns)
	dep, svc := children(ns, app.Name)
	get(t, dep)
	image := dep.Spec.Template.Spec.Containers[0].Image

	setPaused(t, app, true)
	waitForCondition(t, app, conditions.Progressing, metav1.ConditionFalse, conditions.ReasonPaused)
	waitForEvent(t, app, conditions.EventPaused)
	op.Mutations.WaitQuiet(t, ns, time.Second, settleWithin)
	op.Mutations.Reset()

	before := reconcileCount(t, "appservice")
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Spec.Image = "nginx:1.28" })
	if err := k8s.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, app)
		c := meta.FindStatusCondition(app.Status.Conditions, conditions.Progressing)
		return reconcileCount(t, "appservice") > before+1 && c != nil && strings.Contains(c.Message, "generation 2"),
			fmt.Sprintf("Progressing %+v", c)
	})
	time.Sleep(time.Second)
	onlyStatusOf(t, op.Mutations.In(ns), "appservices/"+app.Name)
	get(t, dep)
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Errorf("image %s while paused, want %s kept", got, image)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc); !isNotFound(err) {
		t.Errorf("the Service deleted while paused: %v, want it left deleted", err)
	}
	get(t, app)
	if app.Status.ObservedGeneration != 1 {
		t.Errorf("status.observedGeneration %d while generation %d is paused, want 1", app.Status.ObservedGeneration, app.Generation)
	}
	if c := readyOf(t, app); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
		t.Errorf("Ready %s at generation %d while paused, want the last observation kept (True at 1)", c.Status, c.ObservedGeneration)
	}

	setPaused(t, app, false)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", "the image is not applied yet"
	})
	waitForObject(t, svc)
	markAvailable(t, ns, app.Name)
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, app)
		ready := meta.FindStatusCondition(app.Status.Conditions, conditions.Ready)
		return app.Status.ObservedGeneration == app.Generation && progressingReason(app) != conditions.ReasonPaused &&
				ready != nil && ready.Status == metav1.ConditionTrue,
			fmt.Sprintf("observedGeneration %d of %d, conditions %v", app.Status.ObservedGeneration, app.Generation, app.Status.Conditions)
	})
	waitForEvent(t, app, conditions.EventResumed)
}

// A resource created paused gets no child, and a status that says it is
// not Ready.
func TestAppServiceCreatedPausedIsNotReadyAndHasNoChildren(t *testing.T) {
	ns, op := startOperator(t)
	app := newAppService(t, ns)
	app.Annotations = map[string]string{conditions.PausedAnnotation: "true"}
	testenv.Create(t, k8s, app)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonPaused)
	op.Mutations.WaitQuiet(t, ns, time.Second, settleWithin)
	onlyStatusOf(t, op.Mutations.In(ns), "appservices/"+app.Name)
	dep, _ := children(ns, app.Name)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dep), dep); !isNotFound(err) {
		t.Errorf("the Deployment of a resource created paused: %v, want none", err)
	}
}

// A paused RedisEnterpriseCluster whose primary restarted (it answers as
// a replica of no one) is not failed over, however long it waits, and a
// change of its spec is not applied: no node command, no request beyond
// its status. Resumed, the failover and the change follow in the next
// pass.
func TestPausedRedisClusterNeitherFailsOverNorApplies(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: replicaOf("127.0.0.1", 0, false), 1: replicaOf(r0Host, 90, false), 2: replicaOf(r0Host, 95, false),
	})
	c, muts := countingClient(t)
	recorder := events.NewFakeRecorder(100)
	f.r = controller.NewObservedRedisReconciler(c, f.redis, f.clock, failoverWindow, prometheus.NewRegistry(), recorder)
	ui := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.UIServiceName("r")}}
	get(t, ui)
	uiVersion := ui.ResourceVersion

	setPaused(t, f.obj, true)
	testenv.Update(t, k8s, f.obj, func(r *redisv1alpha1.RedisEnterpriseCluster) { r.Spec.UIServiceType = corev1.ServiceTypeNodePort })
	for range 3 {
		f.mustPass()
		f.clock.Step(10 * failoverWindow)
	}
	if len(f.redis.Calls) != 0 || f.obj.Status.Primary != "r-0" || f.roleLabel(0) != redisv1alpha1.RolePrimary {
		t.Errorf("while paused: calls %v, primary %s, r-0 labelled %s; want no call and r-0 kept", f.redis.Calls, f.obj.Status.Primary, f.roleLabel(0))
	}
	onlyStatusOf(t, muts.In(f.obj.Namespace), "redisenterpriseclusters/r")
	get(t, ui)
	if ui.ResourceVersion != uiVersion || ui.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("ui Service %s (version %s, was %s) while paused, want it untouched", ui.Spec.Type, ui.ResourceVersion, uiVersion)
	}
	if got := progressingReason(f.obj); got != conditions.ReasonPaused {
		t.Errorf("Progressing reason %s while paused, want %s", got, conditions.ReasonPaused)
	}
	if f.obj.Status.ObservedGeneration == f.obj.Generation {
		t.Errorf("status.observedGeneration %d: the paused spec is reported observed", f.obj.Status.ObservedGeneration)
	}
	if evs := drainEvents(recorder); !hasEvent(evs, conditions.EventPaused) {
		t.Errorf("events %v, want %s", evs, conditions.EventPaused)
	}

	setPaused(t, f.obj, false)
	f.mustPass()
	if f.obj.Status.Primary != "r-2" || len(f.redis.CallsMatching("promote")) != 1 {
		t.Errorf("after the resume: primary %s, calls %v; want r-2 promoted", f.obj.Status.Primary, f.redis.Calls)
	}
	get(t, ui)
	if ui.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("ui Service %s after the resume, want NodePort", ui.Spec.Type)
	}
	if got := progressingReason(f.obj); got == conditions.ReasonPaused {
		t.Errorf("Progressing reason %s after the resume", got)
	}
	if evs := drainEvents(recorder); !hasEvent(evs, conditions.EventResumed) {
		t.Errorf("events %v, want %s", evs, conditions.EventResumed)
	}
}

// A paused EtcdCluster grown from three members to four adds no member
// and applies nothing; resumed, it adds the member.
func TestPausedEtcdClusterChangesNoMember(t *testing.T) {
	f := newEtcdFixture(t, 3)
	f.pass()
	c, muts := countingClient(t)
	r := controller.NewObservedEtcdReconciler(c, f.fake.Dial, prometheus.NewRegistry(), f.recorder)
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)}); err != nil {
			t.Fatal(err)
		}
		get(t, f.obj)
	}
	f.fake.Calls = nil

	setPaused(t, f.obj, true)
	testenv.Update(t, k8s, f.obj, func(e *etcdv1beta2.EtcdCluster) { e.Spec.Size = 4 })
	pass()
	pass()
	if len(f.fake.Calls) != 0 {
		t.Errorf("membership changes while paused: %v, want none", f.fake.Calls)
	}
	onlyStatusOf(t, muts.In(f.obj.Namespace), "etcdclusters/e")
	if got := progressingReason(f.obj); got != conditions.ReasonPaused {
		t.Errorf("Progressing reason %s while paused, want %s", got, conditions.ReasonPaused)
	}
	if f.obj.Status.ObservedGeneration == f.obj.Generation {
		t.Errorf("status.observedGeneration %d: the paused spec is reported observed", f.obj.Status.ObservedGeneration)
	}

	setPaused(t, f.obj, false)
	pass()
	if len(f.fake.Calls) == 0 || !strings.HasPrefix(f.fake.Calls[0], "add") {
		t.Errorf("membership changes after the resume: %v, want a member added", f.fake.Calls)
	}
	if got := progressingReason(f.obj); got == conditions.ReasonPaused {
		t.Errorf("Progressing reason %s after the resume", got)
	}
}

// A paused periodic EtcdBackup starts no Job however many intervals pass;
// resumed, it starts the next one.
func TestPausedEtcdBackupStartsNoJob(t *testing.T) {
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage}})
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "periodic"},
		Spec: etcdv1beta2.EtcdBackupSpec{
			EtcdEndpoints: []string{"http://10.0.0.1:2379"},
			StorageType:   etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
			BackupPolicy:  &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 2, MaxBackups: 2},
			BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{
				ClaimName: "backups", Path: "main/etcd"}},
		},
	}
	testenv.Create(t, k8s, b)
	first := waitForBackupJobs(t, ns, b.Name, 1)[0]
	setPaused(t, b, true)
	waitForCondition(t, b, conditions.Progressing, metav1.ConditionFalse, conditions.ReasonPaused)
	endBackupJob(t, &first, backuprun.EtcdResult{Report: backuprun.Report{Key: "/backup/main/etcd_v42_x", TakenAt: time.Now().UTC()}, Revision: 42})
	time.Sleep(3 * 2 * time.Second)
	if jobs := backupJobs(t, ns, b.Name); len(jobs) != 1 {
		t.Errorf("%d jobs after three intervals paused, want the one started before the pause", len(jobs))
	}
	get(t, b)
	if b.Status.LastBackup != "" {
		t.Errorf("status.lastBackup %q while paused: the finished Job was read", b.Status.LastBackup)
	}

	setPaused(t, b, false)
	waitForBackupJobs(t, ns, b.Name, 2)
}
