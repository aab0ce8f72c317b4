package controller_test

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/test/testenv"
)

// newAppService is the seed sample with a node port of its own: node ports
// are cluster-wide and the API-only cluster never empties a namespace.
func newAppService(t *testing.T, ns string) *appv1.AppService {
	t.Helper()
	app := &appv1.AppService{}
	testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
	app.Spec.Ports[0].NodePort = nextNodePort()
	return app
}

var lastNodePort atomic.Int32

// nextNodePort hands out a node port no other test uses, from the bottom
// of the default range (30000-32767): the API server assigns the ports
// nobody chose from the top first and the bottom 86 (30000-30085) last, so
// a port chosen there does not meet one a Service got by chance. The
// samples' 30002 stays clear.
// createAvailableAppService creates an AppService in ns and answers for the
// Deployment controller at once, as it does on a cluster that is not
// overloaded, until the AppService is Ready.
func createAvailableAppService(t *testing.T, ns string) *appv1.AppService {
	t.Helper()
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, _ := children(ns, app.Name)
	waitForObject(t, dep)
	markAvailable(t, ns, app.Name)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	return app
}

func nextNodePort() int32 {
	n := 30020 + lastNodePort.Add(1)
	if n > 30085 {
		panic("more chosen node ports than the range keeps for them")
	}
	return n
}

// deleteAfterTest deletes the objects when the test ends, while the operator
// still runs: owners first, so that nothing is recreated.
func deleteAfterTest(t *testing.T, objs ...client.Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			_ = k8s.Delete(context.Background(), o)
		}
	})
}

func children(ns, name string) (*appsv1.Deployment, *corev1.Service) {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestAppServiceSampleCreatesOwnedDeploymentAndService(t *testing.T) {
	ns, _ := startOperator(t)
	app := &appv1.AppService{}
	testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, "nginx-app")
	deleteAfterTest(t, app, svc)

	waitForObject(t, dep)
	waitForObject(t, svc)

	for _, o := range []client.Object{dep, svc} {
		if !metav1.IsControlledBy(o, app) {
			t.Errorf("%T %s is not controlled by the AppService: %v", o, o.GetName(), o.GetOwnerReferences())
		}
		if o.GetLabels()["app"] != "nginx-app" || o.GetLabels()["app.kubernetes.io/managed-by"] != "app-operator" {
			t.Errorf("%T labels = %v", o, o.GetLabels())
		}
	}
	if got := *dep.Spec.Replicas; got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != "nginx:1.7.9" || len(c.Ports) != 1 || c.Ports[0].ContainerPort != 80 {
		t.Errorf("container = %+v", c)
	}
	wantSelector := map[string]string{"app": "nginx-app", "app.kubernetes.io/name": "appservice", "app.kubernetes.io/instance": "nginx-app"}
	if !equalMaps(dep.Spec.Selector.MatchLabels, wantSelector) || !equalMaps(svc.Spec.Selector, wantSelector) {
		t.Errorf("selectors: Deployment %v, Service %v, want %v", dep.Spec.Selector.MatchLabels, svc.Spec.Selector, wantSelector)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != 30002 || svc.Spec.Ports[0].TargetPort.IntValue() != 80 {
		t.Errorf("service spec = %+v", svc.Spec)
	}

	// Until the Deployment is available the AppService is not Ready.
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	waitForCondition(t, app, conditions.Progressing, metav1.ConditionTrue, conditions.ReasonRolloutInProgress)
	markAvailable(t, ns, "nginx-app")
	ready := waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForCondition(t, app, conditions.Progressing, metav1.ConditionFalse, conditions.ReasonRolloutComplete)
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
	if ready.ObservedGeneration != app.Generation || app.Status.ObservedGeneration != app.Generation {
		t.Errorf("observedGeneration: condition %d, status %d, want %d", ready.ObservedGeneration, app.Status.ObservedGeneration, app.Generation)
	}
	if app.Status.ReadyReplicas != 2 || app.Status.AvailableReplicas != 2 || app.Status.Replicas != 2 {
		t.Errorf("replica counts = %+v", app.Status)
	}
	if app.Status.Selector == "" {
		t.Error("status.selector is empty: the scale subresource needs it")
	}
}

func TestWebServiceSampleCreatesChildren(t *testing.T) {
	ns, _ := startOperator(t)
	web := &appv1.WebService{}
	testenv.LoadSample(t, "app_v1_webservice.yaml", web, ns)
	testenv.Create(t, k8s, web)
	dep, svc := children(ns, "nginx-app")
	deleteAfterTest(t, web, svc)
	waitForObject(t, dep)
	waitForObject(t, svc)
	if !metav1.IsControlledBy(dep, web) || dep.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "webservice" {
		t.Errorf("Deployment owner %v, selector %v", dep.OwnerReferences, dep.Spec.Selector.MatchLabels)
	}
	markAvailable(t, ns, "nginx-app")
	waitForCondition(t, web, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
}

func TestAppServiceSpecChangesReachChildren(t *testing.T) {
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, "nginx-app")
	waitForObject(t, svc)
	clusterIP := svc.Spec.ClusterIP
	newNodePort := nextNodePort()

	testenv.Update(t, k8s, app, func(a *appv1.AppService) {
		a.Spec.Image = "nginx:1.27"
		a.Spec.Size = ptr.To[int32](4)
		a.Spec.Envs = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
		a.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}
		a.Spec.Ports = []appv1.ServicePort{
			{Name: "http", Port: 80, TargetPort: ptr.To(intstr.FromInt32(8080)), NodePort: newNodePort},
			{Name: "metrics", Port: 9090},
		}
	})

	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		c := dep.Spec.Template.Spec.Containers[0]
		ok := c.Image == "nginx:1.27" && *dep.Spec.Replicas == 4 && len(c.Env) == 1 && c.Env[0].Value == "prod" &&
			c.Resources.Limits.Memory().String() == "128Mi" && len(c.Ports) == 2 && c.Ports[0].ContainerPort == 8080
		return ok, "Deployment not updated yet"
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, svc)
		return len(svc.Spec.Ports) == 2 && svc.Spec.Ports[0].NodePort == newNodePort && svc.Spec.Ports[0].TargetPort.IntValue() == 8080,
			"Service ports not updated yet"
	})
	if svc.Spec.ClusterIP != clusterIP {
		t.Errorf("clusterIP changed from %s to %s", clusterIP, svc.Spec.ClusterIP)
	}
	// The second port asked for no node port: the cluster allocated one, and
	// a later change must not take it back.
	allocated := svc.Spec.Ports[1].NodePort
	if allocated == 0 {
		t.Fatal("no node port allocated for the metrics port")
	}
	testenv.Update(t, k8s, app, func(a *appv1.AppService) { a.Spec.Image = "nginx:1.28" })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", "image not updated"
	})
	get(t, svc)
	if svc.Spec.Ports[1].NodePort != allocated || svc.Spec.ClusterIP != clusterIP {
		t.Errorf("server-assigned fields changed: nodePort %d -> %d, clusterIP %s -> %s",
			allocated, svc.Spec.Ports[1].NodePort, clusterIP, svc.Spec.ClusterIP)
	}
}

func TestAppServiceRecreatesDeletedChildren(t *testing.T) {
	ns, _ := startOperator(t)
	testenv.Create(t, k8s, newAppService(t, ns))
	dep, svc := children(ns, "nginx-app")
	waitForObject(t, dep)
	waitForObject(t, svc)
	oldDep, oldSvc := dep.UID, svc.UID
	for _, o := range []client.Object{dep, svc} {
		if err := k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		d, s := children(ns, "nginx-app")
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d) != nil || k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s) != nil {
			return false, "children not recreated"
		}
		return d.UID != oldDep && s.UID != oldSvc, "children not recreated"
	})
}

func TestAppServiceRepairsDriftAndKeepsForeignFields(t *testing.T) {
	ns, _ := startOperator(t)
	testenv.Create(t, k8s, newAppService(t, ns))
	dep, _ := children(ns, "nginx-app")
	waitForObject(t, dep)

	// Someone scales the Deployment, changes its image and adds an annotation.
	testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](7)
		d.Spec.Template.Spec.Containers[0].Image = "busybox"
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations["example.com/owner-team"] = "web"
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return *dep.Spec.Replicas == 2 && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.7.9",
			"drift not repaired"
	})
	if dep.Annotations["example.com/owner-team"] != "web" {
		t.Errorf("the operator removed an annotation it does not own: %v", dep.Annotations)
	}
}

func TestAppServiceRefusesToAdoptForeignDeployment(t *testing.T) {
	ns, op := startOperator(t)
	labels := map[string]string{"app": "other"}
	foreign := plainDeployment(ns, "nginx-app", labels, "redis")
	foreign.Spec.Replicas = ptr.To[int32](1)
	testenv.Create(t, k8s, foreign)
	rv := foreign.ResourceVersion

	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	cond := waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonChildConflict)
	if !strings.Contains(cond.Message, "Deployment nginx-app") {
		t.Errorf("the condition does not name the Deployment: %q", cond.Message)
	}
	waitForCondition(t, app, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonChildConflict)
	get(t, foreign)
	if foreign.ResourceVersion != rv {
		t.Errorf("the foreign Deployment was changed: %+v", foreign.ObjectMeta)
	}
	// Nothing was taken: not even the Service, which had no conflict.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx-app"}}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(svc), svc); !isNotFound(err) {
		t.Errorf("the Service was created although the Deployment conflicts: %v", err)
	}
	for _, m := range op.Mutations.In(ns) {
		if strings.Contains(m, "/deployments/") {
			t.Errorf("the operator wrote to a Deployment it does not own: %s", m)
		}
	}
}

// A new AppService's children are looked for in the API server's watch
// cache (resourceVersion "0"), not in etcd; a foreign object of the same
// name is still found (TestAppServiceRefusesToAdoptForeignDeployment).
func TestNewAppServiceChildrenAreLookedForInTheWatchCache(t *testing.T) {
	ns, op := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, app.Name)
	waitForObject(t, dep)
	waitForObject(t, svc)
	reads := op.Reads.In(ns)
	for _, child := range []string{"/deployments/" + app.Name, "/services/" + app.Name} {
		i := slices.IndexFunc(reads, func(r string) bool { return strings.HasSuffix(strings.SplitN(r, "?", 2)[0], child) })
		if i < 0 {
			t.Errorf("%s was never read from the API server; reads: %v", child, reads)
			continue
		}
		u, err := url.Parse(reads[i])
		if err != nil {
			t.Fatal(err)
		}
		if rv := u.Query().Get("resourceVersion"); rv != "0" {
			t.Errorf("the first read of %s is %s: resourceVersion %q, want \"0\" (the watch cache)", child, reads[i], rv)
		}
	}
}

func TestWebServiceAndAppServiceOfOneNameDoNotFight(t *testing.T) {
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, "nginx-app")
	waitForObject(t, dep)
	waitForObject(t, svc)
	depRV, svcRV := dep.ResourceVersion, svc.ResourceVersion

	web := &appv1.WebService{}
	testenv.LoadSample(t, "app_v1_webservice.yaml", web, ns)
	web.Spec.Ports[0].NodePort = nextNodePort()
	testenv.Create(t, k8s, web)
	cond := waitForCondition(t, web, conditions.Ready, metav1.ConditionFalse, conditions.ReasonChildConflict)
	if !strings.Contains(cond.Message, "AppService nginx-app") {
		t.Errorf("the condition does not name the owner: %q", cond.Message)
	}
	get(t, dep)
	get(t, svc)
	if !metav1.IsControlledBy(dep, app) || !metav1.IsControlledBy(svc, app) || dep.ResourceVersion != depRV || svc.ResourceVersion != svcRV {
		t.Errorf("the WebService touched the AppService's children")
	}
}

func TestAppServiceNodePortTakenReportsAndKeepsChildren(t *testing.T) {
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	dep, svc := children(ns, "nginx-app")
	waitForObject(t, dep)
	waitForObject(t, svc)

	// Another Service holds a node port.
	taken := nextNodePort()
	holder := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: taken}}},
	}
	testenv.Create(t, k8s, holder)
	original := app.Spec.Ports[0].NodePort

	testenv.Update(t, k8s, app, func(a *appv1.AppService) {
		a.Spec.Ports[0].NodePort = taken
		a.Spec.Image = "nginx:1.27"
	})
	cond := waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonNodePortAllocated)
	if !strings.Contains(cond.Message, strconv.Itoa(int(taken))) || !strings.Contains(cond.Message, "already allocated") {
		t.Errorf("the condition does not carry the server's message: %q", cond.Message)
	}
	get(t, svc)
	get(t, dep)
	if svc.Spec.Ports[0].NodePort != original || dep.Spec.Template.Spec.Containers[0].Image != "nginx:1.7.9" {
		t.Errorf("children changed although the spec was rejected: nodePort %d, image %s",
			svc.Spec.Ports[0].NodePort, dep.Spec.Template.Spec.Containers[0].Image)
	}
	if app.Status.ObservedGeneration == app.Generation {
		t.Errorf("status.observedGeneration moved to %d after a failed pass", app.Generation)
	}
}

func TestAppServiceSteadyStateMakesNoWrites(t *testing.T) {
	ns, op := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	markAvailable(t, ns, "nginx-app")
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)

	// A change to a child the operator watches wakes it up: nothing to do.
	// (A Deployment's annotations would bump its generation, a real change.)
	_, svc := children(ns, "nginx-app")
	expectNoMutations(t, op, ns, "appservice", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) {
			s.Annotations = map[string]string{"example.com/touched": time.Now().String()}
		})
	})

	// A restart passes over every resource again: nothing to do either.
	op.Stop()
	before := reconcileCount(t, "appservice")
	op2 := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "appservice") > before, "no pass after the restart"
	})
	time.Sleep(time.Second)
	if muts := op2.Mutations.In(ns); len(muts) != 0 {
		t.Fatalf("after a restart the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}

func TestAppServiceEventsOnTransitionsOnly(t *testing.T) {
	ns, op := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	waitForCondition(t, app, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	markAvailable(t, ns, "nginx-app")
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)

	reasons := func() []string {
		list := &eventsv1.EventList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == "nginx-app" && e.Regarding.Kind == "AppService" {
				out = append(out, e.Reason)
			}
		}
		return testenv.Sorted(out)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		got := reasons()
		return strings.Join(got, ",") == "Available,RolloutInProgress", strings.Join(got, ",")
	})
	_, svc := children(ns, "nginx-app")
	expectNoMutations(t, op, ns, "appservice", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/poke": "1"} })
	})
	if got := reasons(); strings.Join(got, ",") != "Available,RolloutInProgress" {
		t.Errorf("events after a steady pass = %v", got)
	}
}

func TestAppServiceScaleSubresource(t *testing.T) {
	ns, _ := startOperator(t)
	app := newAppService(t, ns)
	testenv.Create(t, k8s, app)
	markAvailable(t, ns, "nginx-app")
	waitForCondition(t, app, conditions.Ready, metav1.ConditionTrue, "")

	scale := &autoscalingv1.Scale{}
	if err := k8s.SubResource("scale").Get(context.Background(), app, scale); err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.Spec.Replicas != 2 || !strings.Contains(scale.Status.Selector, "app.kubernetes.io/instance=nginx-app") {
		t.Errorf("scale = %+v", scale)
	}
	scale.Spec.Replicas = 5
	if err := k8s.SubResource("scale").Update(context.Background(), app, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update scale: %v", err)
	}
	dep, _ := children(ns, "nginx-app")
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return *dep.Spec.Replicas == 5, "Deployment not scaled"
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
