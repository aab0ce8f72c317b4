package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/resources/myweb"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// Node ports of the MyWeb tests: the sample's own, the one it moves to, and
// the one two MyWebs fight over. Distinct from every other e2e test's.
const (
	sampleNodePort    = 30100
	movedNodePort     = 30101
	contestedNodePort = 30102
)

// The seed sample, applied unchanged, becomes Ready and completed with a
// Running nginx pod that mounts the page; a new page rolls the pod, a new
// node port moves the Service, and deleting the MyWeb collects its children.
func TestMyWebSeedSampleServesThePage(t *testing.T) {
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	web := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)
	if web.Spec.NodePortNumber != sampleNodePort {
		t.Fatalf("the sample asks for node port %d, this test expects %d", web.Spec.NodePortNumber, sampleNodePort)
	}
	if err := c.Create(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, c, web)

	first := servingPod(t, c, ns, web.Spec.PageContentHtml)
	checkMountsThePage(t, first)

	// A new page: the ConfigMap changes and a new pod replaces the old one.
	newPage := "<html><body><h1>Second edition</h1></body></html>\n"
	updateMyWeb(t, c, web, func(w *operatorv1.MyWeb) { w.Spec.PageContentHtml = newPage })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"}}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["index.html"] == newPage, fmt.Sprintf("index.html = %q (%v)", cm.Data["index.html"], err)
	})
	waitCompleted(t, c, web)
	second := servingPod(t, c, ns, newPage)
	if second.UID == first.UID {
		t.Errorf("pod %s still serves: the new page did not roll the pods", first.Name)
	}
	checkMountsThePage(t, second)

	// A new node port moves the Service.
	updateMyWeb(t, c, web, func(w *operatorv1.MyWeb) { w.Spec.NodePortNumber = movedNodePort })
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"}}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(svc), svc)
		return err == nil && svc.Spec.Ports[0].NodePort == movedNodePort, fmt.Sprintf("Service %+v (%v)", svc.Spec.Ports, err)
	})
	waitCompleted(t, c, web)

	// The garbage collector removes the children with the MyWeb.
	if err := c.Delete(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	for _, child := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "myweb"}},
	} {
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			err := c.Get(context.Background(), client.ObjectKeyFromObject(child), child)
			return apierrors.IsNotFound(err), fmt.Sprintf("%T still there: %v", child, err)
		})
	}
}

// Two MyWebs asking for the same node port: the second reports the conflict
// and creates nothing; the first keeps serving, untouched.
func TestMyWebSecondOnTheSameNodePortReportsTheConflict(t *testing.T) {
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	first := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", first, ns)
	first.Name = "first"
	first.Spec.NodePortNumber = contestedNodePort
	if err := c.Create(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	waitCompleted(t, c, first)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}
	for _, o := range []client.Object{svc, cm, dep} {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	svcRV, cmRV, depGen := svc.ResourceVersion, cm.ResourceVersion, dep.Generation

	second := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", second, ns)
	second.Name = "second"
	second.Spec.NodePortNumber = contestedNodePort
	if err := c.Create(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	var ready *metav1.Condition
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(second), second); err != nil {
			return false, err.Error()
		}
		ready = meta.FindStatusCondition(second.Status.Conditions, conditions.Ready)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == conditions.ReasonNodePortAllocated,
			fmt.Sprintf("Ready %+v", ready)
	})
	if !strings.Contains(ready.Message, strconv.Itoa(contestedNodePort)) {
		t.Errorf("the condition does not name node port %d: %q", contestedNodePort, ready.Message)
	}
	if second.Status.Completed {
		t.Error("the second MyWeb reports completed")
	}
	for _, o := range []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}},
	} {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%T second exists (%v): the refused MyWeb must create nothing", o, err)
		}
	}
	for _, o := range []client.Object{svc, cm, dep, first} {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	if svc.ResourceVersion != svcRV || cm.ResourceVersion != cmRV || dep.Generation != depGen {
		t.Errorf("the first MyWeb's children changed: Service rv %s -> %s, ConfigMap rv %s -> %s, Deployment generation %d -> %d",
			svcRV, svc.ResourceVersion, cmRV, cm.ResourceVersion, depGen, dep.Generation)
	}
	if !first.Status.Completed {
		t.Errorf("the first MyWeb is no longer completed: %+v", first.Status)
	}
}

// waitCompleted waits until the MyWeb is Ready and completed for its
// current generation.
func waitCompleted(t *testing.T, c client.Client, web *operatorv1.MyWeb) {
	t.Helper()
	waitReady(t, c, web, 2*time.Minute)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(web), web); err != nil {
			return false, err.Error()
		}
		return web.Status.Completed && web.Status.ObservedGeneration == web.Generation,
			fmt.Sprintf("completed %v, observedGeneration %d of %d", web.Status.Completed, web.Status.ObservedGeneration, web.Generation)
	})
}

func updateMyWeb(t *testing.T, c client.Client, web *operatorv1.MyWeb, mutate func(*operatorv1.MyWeb)) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(web), web); err != nil {
			return false, err.Error()
		}
		mutate(web)
		if err := c.Update(context.Background(), web); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// servingPod waits until exactly one pod of the MyWeb exists, Running on the
// fake node, made for the given page, and returns it.
func servingPod(t *testing.T, c client.Client, ns, page string) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		if err := c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "myweb"}); err != nil {
			return false, err.Error()
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods, want 1: %v", len(pods.Items), testenv.PodSummary(&pods))
		}
		p := pods.Items[0]
		return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == cluster.FakeNodeName &&
				p.Annotations[myweb.PageHashAnnotation] == myweb.PageHash(page),
			fmt.Sprintf("pod %s %s on %q, page hash %s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Annotations[myweb.PageHashAnnotation])
	})
	return &pods.Items[0]
}

// checkMountsThePage checks that the pod mounts the ConfigMap myweb where
// nginx serves its default site. (The kwok node runs no container, so the
// page cannot be fetched.)
func checkMountsThePage(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	volume := ""
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "myweb" {
			volume = v.Name
		}
	}
	if volume == "" {
		t.Fatalf("pod %s has no volume of ConfigMap myweb: %+v", pod.Name, pod.Spec.Volumes)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != "nginx" {
		t.Fatalf("pod %s containers = %+v, want one nginx", pod.Name, pod.Spec.Containers)
	}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == volume && m.MountPath == "/usr/share/nginx/html" {
			return
		}
	}
	t.Errorf("pod %s does not mount volume %s at /usr/share/nginx/html: %+v", pod.Name, volume, pod.Spec.Containers[0].VolumeMounts)
}
