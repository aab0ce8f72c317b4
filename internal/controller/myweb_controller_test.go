package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources/myweb"
	"github.com/app-operator/app-operator/test/testenv"
)

// newMyWeb is the seed sample with a node port of its own: node ports are
// cluster-wide and the API-only cluster never empties a namespace.
func newMyWeb(t *testing.T, ns string) *operatorv1.MyWeb {
	t.Helper()
	web := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)
	web.Spec.NodePortNumber = nextNodePort()
	return web
}

func myWebChildren(ns, name string) (*corev1.Service, *corev1.ConfigMap, *appsv1.Deployment) {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	return &corev1.Service{ObjectMeta: meta}, &corev1.ConfigMap{ObjectMeta: meta}, &appsv1.Deployment{ObjectMeta: meta}
}

// waitCompleted waits until status.completed is want for the current generation.
func waitCompleted(t *testing.T, web *operatorv1.MyWeb, want bool) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, web)
		ready := conditionOf(web, conditions.Ready)
		return web.Status.Completed == want && ready != nil && ready.ObservedGeneration == web.Generation,
			fmt.Sprintf("completed=%v generation %d, Ready %+v", web.Status.Completed, web.Generation, ready)
	})
}

func conditionOf(web *operatorv1.MyWeb, condType string) *metav1.Condition {
	for i := range web.Status.Conditions {
		if web.Status.Conditions[i].Type == condType {
			return &web.Status.Conditions[i]
		}
	}
	return nil
}

func TestMyWebSampleServesThePage(t *testing.T) {
	ns, _ := startOperator(t)
	web := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)
	// Only the node port differs from the sample (node ports are cluster-wide).
	web.Spec.NodePortNumber = nextNodePort()
	testenv.Create(t, k8s, web)
	svc, cm, dep := myWebChildren(ns, "myweb")
	waitForObject(t, svc)
	waitForObject(t, cm)
	waitForObject(t, dep)

	for _, o := range []client.Object{svc, cm, dep} {
		if !metav1.IsControlledBy(o, web) {
			t.Errorf("%T %s is not controlled by the MyWeb: %v", o, o.GetName(), o.GetOwnerReferences())
		}
		if o.GetLabels()["app"] != "myweb" || o.GetLabels()["app.kubernetes.io/managed-by"] != "app-operator" {
			t.Errorf("%T labels = %v", o, o.GetLabels())
		}
	}
	if got := cm.Data["index.html"]; got != web.Spec.PageContentHtml || !strings.Contains(got, "<h1>Hello, World!</h1>") {
		t.Errorf("ConfigMap index.html = %q, want the sample's page", got)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 ||
		svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].NodePort != web.Spec.NodePortNumber {
		t.Errorf("Service spec = %+v, want NodePort 80 -> node port %d", svc.Spec, web.Spec.NodePortNumber)
	}
	pod := dep.Spec.Template.Spec
	if *dep.Spec.Replicas != 1 || pod.Containers[0].Image != "nginx" {
		t.Errorf("replicas %d, image %s: want 1 and nginx", *dep.Spec.Replicas, pod.Containers[0].Image)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "myweb" {
		t.Fatalf("pod volumes = %+v, want the ConfigMap myweb", pod.Volumes)
	}
	if m := pod.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != pod.Volumes[0].Name || m[0].MountPath != "/usr/share/nginx/html" {
		t.Errorf("volume mounts = %+v, want %s at /usr/share/nginx/html", m, pod.Volumes[0].Name)
	}

	// Until the Deployment is available the page is not served: completed
	// is false, and present, so that a reader tells "not yet" from "unknown".
	waitForCondition(t, web, conditions.Ready, metav1.ConditionFalse, conditions.ReasonRolloutInProgress)
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(operatorv1.GroupVersion.WithKind("MyWeb"))
	raw.SetNamespace(ns)
	raw.SetName("myweb")
	get(t, raw)
	if completed, found, err := unstructured.NestedBool(raw.Object, "status", "completed"); !found || err != nil || completed {
		t.Errorf("status.completed = %v (found %v, %v), want false and present: %v", completed, found, err, raw.Object["status"])
	}

	markAvailable(t, ns, "myweb")
	ready := waitForCondition(t, web, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable)
	waitForCondition(t, web, conditions.Progressing, metav1.ConditionFalse, conditions.ReasonRolloutComplete)
	waitForCondition(t, web, conditions.Degraded, metav1.ConditionFalse, conditions.ReasonAsExpected)
	waitCompleted(t, web, true)
	if ready.ObservedGeneration != web.Generation || web.Status.ObservedGeneration != web.Generation {
		t.Errorf("observedGeneration: condition %d, status %d, want %d", ready.ObservedGeneration, web.Status.ObservedGeneration, web.Generation)
	}
}

func TestMyWebSpecChangesReachChildren(t *testing.T) {
	ns, _ := startOperator(t)
	web := newMyWeb(t, ns)
	testenv.Create(t, k8s, web)
	svc, cm, dep := myWebChildren(ns, "myweb")
	waitForObject(t, dep)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)
	get(t, svc)
	clusterIP := svc.Spec.ClusterIP

	// A new page: the ConfigMap changes and the pods roll, so completed is
	// false until the new pods are available.
	get(t, dep)
	oldHash, oldGen := dep.Spec.Template.Annotations[myweb.PageHashAnnotation], dep.Generation
	newPage := "<html><body><h1>Second edition</h1></body></html>\n"
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) { w.Spec.PageContentHtml = newPage })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, cm)
		return cm.Data["index.html"] == newPage, fmt.Sprintf("index.html = %q", cm.Data["index.html"])
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		hash := dep.Spec.Template.Annotations[myweb.PageHashAnnotation]
		return hash == myweb.PageHash(newPage) && hash != oldHash && dep.Generation > oldGen,
			fmt.Sprintf("pod template hash %s (was %s), generation %d (was %d)", hash, oldHash, dep.Generation, oldGen)
	})
	waitCompleted(t, web, false)
	waitForCondition(t, web, conditions.Progressing, metav1.ConditionTrue, conditions.ReasonRolloutInProgress)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)

	// A new node port moves the Service and leaves the Deployment alone.
	get(t, dep)
	depGen := dep.Generation
	newPort := nextNodePort()
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) { w.Spec.NodePortNumber = newPort })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, svc)
		return svc.Spec.Ports[0].NodePort == newPort, fmt.Sprintf("node port %d, want %d", svc.Spec.Ports[0].NodePort, newPort)
	})
	waitCompleted(t, web, true)
	if get(t, dep); dep.Generation != depGen {
		t.Errorf("the Deployment changed (generation %d -> %d) for a node port change", depGen, dep.Generation)
	}
	if svc.Spec.ClusterIP != clusterIP {
		t.Errorf("clusterIP changed from %s to %s", clusterIP, svc.Spec.ClusterIP)
	}

	// A new image reaches the Deployment (the seed's controller never applied it).
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) { w.Spec.Image = "nginx:1.27" })
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.27", "image = " + dep.Spec.Template.Spec.Containers[0].Image
	})
	waitCompleted(t, web, false)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)
}

func TestMyWebNodePortTakenByAnotherMyWeb(t *testing.T) {
	ns, op := startOperator(t)
	first := newMyWeb(t, ns)
	testenv.Create(t, k8s, first)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, first, true)
	svc, cm, dep := myWebChildren(ns, "myweb")
	get(t, svc)
	get(t, cm)
	get(t, dep)
	rvs := []string{svc.ResourceVersion, cm.ResourceVersion, dep.ResourceVersion}

	second := newMyWeb(t, ns)
	second.Name = "second"
	second.Spec.NodePortNumber = first.Spec.NodePortNumber
	second.Spec.PageContentHtml = "<h1>second</h1>"
	testenv.Create(t, k8s, second)
	port := strconv.Itoa(int(first.Spec.NodePortNumber))
	cond := waitForCondition(t, second, conditions.Ready, metav1.ConditionFalse, conditions.ReasonNodePortAllocated)
	if !strings.Contains(cond.Message, port) || !strings.Contains(cond.Message, "already allocated") {
		t.Errorf("the condition does not name the port %s: %q", port, cond.Message)
	}
	waitForCondition(t, second, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonNodePortAllocated)
	if get(t, second); second.Status.Completed {
		t.Error("the second MyWeb reports completed")
	}
	// The second MyWeb created nothing: the Service is applied first.
	s2, cm2, d2 := myWebChildren(ns, "second")
	for _, o := range []client.Object{s2, cm2, d2} {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); !isNotFound(err) {
			t.Errorf("%T second exists (%v), want none of its children", o, err)
		}
	}
	// The Service apply was refused, so the ConfigMap and the Deployment
	// were never even attempted.
	for _, m := range op.Mutations.In(ns) {
		if strings.Contains(m, "/configmaps/second") || strings.Contains(m, "/deployments/second") {
			t.Errorf("the operator wrote a child of the second MyWeb past the refused Service: %s", m)
		}
	}
	// The first is untouched.
	get(t, svc)
	get(t, cm)
	get(t, dep)
	if got := []string{svc.ResourceVersion, cm.ResourceVersion, dep.ResourceVersion}; strings.Join(got, ",") != strings.Join(rvs, ",") {
		t.Errorf("the first MyWeb's children changed: resourceVersions %v -> %v", rvs, got)
	}
	if get(t, first); !first.Status.Completed || conditionOf(first, conditions.Ready).Status != metav1.ConditionTrue {
		t.Errorf("the first MyWeb is no longer completed: %+v", first.Status)
	}
}

func TestMyWebNodePortTakenKeepsChildren(t *testing.T) {
	ns, _ := startOperator(t)
	web := newMyWeb(t, ns)
	testenv.Create(t, k8s, web)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)
	svc, cm, dep := myWebChildren(ns, "myweb")
	get(t, dep)
	oldHash := dep.Spec.Template.Annotations[myweb.PageHashAnnotation]

	taken := nextNodePort()
	holder := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, NodePort: taken}}},
	}
	testenv.Create(t, k8s, holder)
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) {
		w.Spec.NodePortNumber = taken
		w.Spec.PageContentHtml = "<h1>new</h1>"
		w.Spec.Image = "nginx:1.27"
	})
	cond := waitForCondition(t, web, conditions.Ready, metav1.ConditionFalse, conditions.ReasonNodePortAllocated)
	if !strings.Contains(cond.Message, strconv.Itoa(int(taken))) {
		t.Errorf("the condition does not name the port %d: %q", taken, cond.Message)
	}
	get(t, web)
	if web.Status.Completed || web.Status.ObservedGeneration == web.Generation {
		t.Errorf("completed %v, observedGeneration %d for generation %d: want false and behind", web.Status.Completed, web.Status.ObservedGeneration, web.Generation)
	}
	get(t, svc)
	get(t, cm)
	get(t, dep)
	if svc.Spec.Ports[0].NodePort == taken || strings.Contains(cm.Data["index.html"], "new") ||
		dep.Spec.Template.Annotations[myweb.PageHashAnnotation] != oldHash || dep.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Errorf("children changed although the node port is taken: nodePort %d, page %q, image %s",
			svc.Spec.Ports[0].NodePort, cm.Data["index.html"], dep.Spec.Template.Spec.Containers[0].Image)
	}
}

func TestMyWebNodePortOutsideTheClusterRange(t *testing.T) {
	ns, _ := startOperator(t)
	web := newMyWeb(t, ns)
	web.Spec.NodePortNumber = 80
	testenv.Create(t, k8s, web)
	cond := waitForCondition(t, web, conditions.Ready, metav1.ConditionFalse, conditions.ReasonApplyRejected)
	// The server's own words, which give the range.
	if !strings.Contains(cond.Message, "80") || !strings.Contains(cond.Message, "30000-32767") {
		t.Errorf("the condition does not carry the server's message: %q", cond.Message)
	}
	waitForCondition(t, web, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonApplyRejected)
	svc, cm, dep := myWebChildren(ns, "myweb")
	for _, o := range []client.Object{svc, cm, dep} {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); !isNotFound(err) {
			t.Errorf("%T exists (%v) although the node port is refused", o, err)
		}
	}

	// Fixing the spec recovers.
	testenv.Update(t, k8s, web, func(w *operatorv1.MyWeb) { w.Spec.NodePortNumber = nextNodePort() })
	waitForObject(t, dep)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)
}

func TestMyWebRepairsDrift(t *testing.T) {
	ns, _ := startOperator(t)
	web := newMyWeb(t, ns)
	testenv.Create(t, k8s, web)
	svc, cm, dep := myWebChildren(ns, "myweb")
	waitForObject(t, cm)
	waitForObject(t, dep)

	// Someone edits the page in the ConfigMap and annotates it.
	testenv.Update(t, k8s, cm, func(c *corev1.ConfigMap) {
		c.Data["index.html"] = "<h1>defaced</h1>"
		c.Annotations = map[string]string{"example.com/owner-team": "web"}
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, cm)
		return cm.Data["index.html"] == web.Spec.PageContentHtml, "page not restored: " + cm.Data["index.html"]
	})
	if cm.Annotations["example.com/owner-team"] != "web" {
		t.Errorf("the operator removed an annotation it does not own: %v", cm.Annotations)
	}

	// Someone points the Deployment at another image and unmounts the page.
	testenv.Update(t, k8s, dep, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "busybox"
		d.Spec.Template.Spec.Containers[0].VolumeMounts = nil
	})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		get(t, dep)
		c := dep.Spec.Template.Spec.Containers[0]
		return c.Image == "nginx" && len(c.VolumeMounts) == 1 && c.VolumeMounts[0].MountPath == myweb.HTMLDir,
			fmt.Sprintf("image %s, mounts %+v", c.Image, c.VolumeMounts)
	})

	// Someone deletes the Service and the ConfigMap.
	waitForObject(t, svc)
	oldSvc, oldCM := svc.UID, cm.UID
	for _, o := range []client.Object{svc, cm} {
		if err := k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		s, c, _ := myWebChildren(ns, "myweb")
		if k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s) != nil || k8s.Get(context.Background(), client.ObjectKeyFromObject(c), c) != nil {
			return false, "children not recreated"
		}
		return s.UID != oldSvc && c.UID != oldCM && s.Spec.Ports[0].NodePort == web.Spec.NodePortNumber &&
			c.Data["index.html"] == web.Spec.PageContentHtml, "children not recreated"
	})
}

func TestMyWebRefusesToAdoptForeignConfigMap(t *testing.T) {
	ns, op := startOperator(t)
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"},
		Data:       map[string]string{"index.html": "<h1>someone else's page</h1>"},
	}
	testenv.Create(t, k8s, foreign)
	rv := foreign.ResourceVersion

	web := newMyWeb(t, ns)
	testenv.Create(t, k8s, web)
	cond := waitForCondition(t, web, conditions.Ready, metav1.ConditionFalse, conditions.ReasonChildConflict)
	if !strings.Contains(cond.Message, "ConfigMap myweb") {
		t.Errorf("the condition does not name the ConfigMap: %q", cond.Message)
	}
	waitForCondition(t, web, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonChildConflict)
	if get(t, foreign); foreign.ResourceVersion != rv {
		t.Errorf("the foreign ConfigMap was changed: %+v", foreign)
	}
	// Nothing was taken: not even the Service, which is applied first.
	svc, _, dep := myWebChildren(ns, "myweb")
	for _, o := range []client.Object{svc, dep} {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); !isNotFound(err) {
			t.Errorf("%T was created although the ConfigMap conflicts: %v", o, err)
		}
	}
	for _, m := range op.Mutations.In(ns) {
		if strings.Contains(m, "/configmaps/") {
			t.Errorf("the operator wrote to a ConfigMap it does not own: %s", m)
		}
	}
}

func TestMyWebSteadyStateMakesNoWrites(t *testing.T) {
	ns, op := startOperator(t)
	web := newMyWeb(t, ns)
	testenv.Create(t, k8s, web)
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)

	// Changes to watched children wake the operator up: nothing to do.
	svc, cm, _ := myWebChildren(ns, "myweb")
	expectNoMutations(t, op, ns, "myweb", func() {
		testenv.Update(t, k8s, svc, func(s *corev1.Service) { s.Annotations = map[string]string{"example.com/touched": "1"} })
	})
	expectNoMutations(t, op, ns, "myweb", func() {
		testenv.Update(t, k8s, cm, func(c *corev1.ConfigMap) { c.Annotations = map[string]string{"example.com/touched": "1"} })
	})

	// A restart passes over the MyWeb again: nothing to do either.
	op.Stop()
	before := reconcileCount(t, "myweb")
	op2 := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		return reconcileCount(t, "myweb") > before, "no pass after the restart"
	})
	time.Sleep(time.Second)
	if muts := op2.Mutations.In(ns); len(muts) != 0 {
		t.Fatalf("after a restart the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}

// TestMyWebLargestPageFitsInAConfigMap proves the admission bound is safe:
// the largest page the schema accepts is stored and served.
func TestMyWebLargestPageFitsInAConfigMap(t *testing.T) {
	ns, _ := startOperator(t)
	web := newMyWeb(t, ns)
	// 333333 three-byte characters: 999999 bytes.
	web.Spec.PageContentHtml = strings.Repeat("預", operatorv1.MaxPageBytes/3)
	testenv.Create(t, k8s, web)
	_, cm, dep := myWebChildren(ns, "myweb")
	waitForObject(t, dep)
	get(t, cm)
	if cm.Data["index.html"] != web.Spec.PageContentHtml {
		t.Errorf("index.html holds %d bytes, want %d", len(cm.Data["index.html"]), len(web.Spec.PageContentHtml))
	}
	markAvailable(t, ns, "myweb")
	waitCompleted(t, web, true)
}
