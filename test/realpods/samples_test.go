package realpods

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// The Memcached sample (three replicas of the API's default image): every
// pod that status.nodes names answers version, set and get on 11211; scaled
// to one, status.nodes names exactly the pod that still answers.
func TestMemcachedSampleNodesAnswerAndScaleIn(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c, cs := context.Background(), operatorClient(t), clientset(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	m := &cachev1alpha1.Memcached{}
	testenv.LoadSample(t, "cache_v1alpha1_memcached.yaml", m, ns)
	if err := c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	conditionsOf := func() []metav1.Condition { return m.Status.Conditions }

	// ip returns the address of each pod status.nodes names.
	nodeAddresses := func() map[string]string {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, name := range m.Status.Nodes {
			for _, p := range pods.Items {
				if p.Name == name {
					out[name] = net.JoinHostPort(p.Status.PodIP, "11211")
				}
			}
		}
		return out
	}
	waitCondition(t, c, m, conditionsOf, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable, 3*time.Minute)
	if len(m.Status.Nodes) != int(m.Spec.Size) {
		t.Fatalf("status.nodes = %q, want %d pods", m.Status.Nodes, m.Spec.Size)
	}
	for name, addr := range nodeAddresses() {
		key, value := "key-"+name, "value of "+name
		if got, err := memcachedCommand(addr, "version"); err != nil || !strings.HasPrefix(got, "VERSION ") {
			t.Errorf("pod %s at %s: version answered %q (%v)", name, addr, got, err)
		}
		set := fmt.Sprintf("set %s 0 0 %d\r\n%s", key, len(value), value)
		if got, err := memcachedCommand(addr, set); err != nil || got != "STORED\r\n" {
			t.Errorf("pod %s at %s: set answered %q (%v)", name, addr, got, err)
		}
		want := fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", key, len(value), value)
		if got, err := memcachedCommand(addr, "get "+key); err != nil || got != want {
			t.Errorf("pod %s at %s: get answered %q (%v), want %q", name, addr, got, err, want)
		}
	}

	before := nodeAddresses()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		m.Spec.Size = 1
		err := c.Update(ctx, m)
		return err == nil, fmt.Sprint(err)
	})
	// status.nodes names exactly the pods that still answer.
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err.Error()
		}
		if len(m.Status.Nodes) != 1 {
			return false, fmt.Sprintf("status.nodes = %q", m.Status.Nodes)
		}
		for name, addr := range before {
			_, err := memcachedCommand(addr, "version")
			if answers := err == nil; answers != slices.Contains(m.Status.Nodes, name) {
				return false, fmt.Sprintf("pod %s answers: %v, status.nodes = %q", name, answers, m.Status.Nodes)
			}
		}
		return true, ""
	})
}

// The WebService sample (nginx:1.7.9 on node port 30002): its node port
// serves nginx, and a changed image (nginx, the same stand-in under
// another name) rolls the pods and still serves.
func TestWebServiceSampleRollsANewImageWhileServing(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c, cs := context.Background(), operatorClient(t), clientset(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	web := &appv1.WebService{}
	testenv.LoadSample(t, "app_v1_webservice.yaml", web, ns)
	// The AppService sample has the same node port; the two tests run side
	// by side.
	web.Spec.Ports[0].NodePort = 30003
	if err := c.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	conditionsOf := func() []metav1.Condition { return web.Status.Conditions }
	waitCondition(t, c, web, conditionsOf, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable, 3*time.Minute)
	url := "http://127.0.0.1:30003/"
	tr := startTraffic(url, "Welcome to nginx!")
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		return !tr.SawMarker().IsZero(), "no nginx page yet at " + url
	})

	changed := time.Now()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return false, err.Error()
		}
		web.Spec.Image = "nginx"
		err := c.Update(ctx, web)
		return err == nil, fmt.Sprint(err)
	})
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return false, err.Error()
		}
		ready := conditionSummary(web.Status.Conditions, conditions.Ready)
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		newImage := 0
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image == "nginx" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				newImage++
			}
		}
		return ready == conditions.ReasonRolloutComplete+"/True" || (ready == conditions.ReasonAvailable+"/True" && newImage == int(*web.Spec.Size) && len(pods.Items) == newImage),
			fmt.Sprintf("Ready %s, pods %v", ready, testenv.PodSummary(pods))
	})
	rolled := time.Since(changed)
	time.Sleep(time.Second)
	requests, failures := tr.Stop()
	// It serves once rolled. Requests during the roll are counted, not
	// required to pass: on a machine loaded enough that kube-proxy sees
	// an endpoint go later than the old pod's drain, some are refused
	// (docs/real-pods.md).
	waitServesContaining(t, url, "Welcome to nginx!", 30*time.Second)
	t.Logf("the new image rolled in %.1f s; %d requests during it, %d failed %.200q", rolled.Seconds(), requests, len(failures), failures)
}

// conditionSummary returns "reason/status" of the condition of type condType, or "".
func conditionSummary(conds []metav1.Condition, condType string) string {
	for _, c := range conds {
		if c.Type == condType {
			return c.Reason + "/" + string(c.Status)
		}
	}
	return ""
}

// The MicroServiceDeploy sample cannot run here (image "just a image url",
// three replicas of 2 CPUs each on a 2-CPU node) and says exactly why; an
// instance with an image and requests that fit serves through its Service;
// idle, it runs no pod. Not parallel: one of the sample's pods takes the
// node's two CPUs until the sample is deleted.
func TestMicroServiceDeploySampleSaysWhyItCannotRunAndARealOneServes(t *testing.T) {
	needCluster(t)
	ctx, c, cs := context.Background(), operatorClient(t), clientset(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	sample := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, "custom_v1_microservicedeploy.yaml", sample, ns)
	if err := c.Create(ctx, sample); err != nil {
		t.Fatal(err)
	}
	conditionsOf := func() []metav1.Condition { return sample.Status.Conditions }
	degraded := waitCondition(t, c, sample, conditionsOf, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonPodUnschedulable, 2*time.Minute)
	if !strings.Contains(degraded.Message, "Insufficient cpu") {
		t.Errorf("Degraded message %q does not give the scheduler's reason", degraded.Message)
	}
	t.Logf("the sample says: %s", degraded.Message)
	if err := c.Delete(ctx, sample); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("the sample's pods: %v (%v)", testenv.PodSummary(pods), err)
	})

	// The sample with an image that runs and requests that fit.
	ms := &customv1.MicroServiceDeploy{}
	testenv.LoadSample(t, "custom_v1_microservicedeploy.yaml", ms, ns)
	ms.Name, ms.Spec.FullName = "ms-sample-v1s1", "ms-sample-v1s1"
	ms.Spec.Image = "nginx:1.7.9"
	ms.Spec.Port = ptr.To[int32](80)
	ms.Spec.ResourceRequirements.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	ms.Spec.ResourceRequirements.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if err := c.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	conditionsOf = func() []metav1.Condition { return ms.Status.Conditions }
	waitCondition(t, c, ms, conditionsOf, conditions.Ready, metav1.ConditionTrue, conditions.ReasonAvailable, 3*time.Minute)
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ms.Spec.FullName}, svc); err != nil {
		t.Fatal(err)
	}
	// The Service sends its port to the instance's pods: each endpoint
	// it lists serves the page at the port it names.
	var endpoints []string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
		if err != nil {
			return false, err.Error()
		}
		endpoints = nil
		for _, sl := range slices.Items {
			for _, ep := range sl.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(sl.Ports) == 1 {
					endpoints = append(endpoints, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*sl.Ports[0].Port))))
				}
			}
		}
		return len(endpoints) == int(*ms.Spec.Replicas), fmt.Sprintf("ready endpoints of Service %s: %v", svc.Name, endpoints)
	})
	for _, ep := range endpoints {
		waitServesContaining(t, "http://"+ep+"/", "Welcome to nginx!", 30*time.Second)
	}
	// And its cluster IP, from the node through kube-proxy. Twice in a
	// dozen runs, requests to a new Service's cluster IP left the node
	// untranslated for a whole minute (answered by whatever the machine's
	// network puts on port 80): logged, not failed (docs/real-pods.md).
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/"
	var body string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if body, err = testenv.Get(&http.Client{Timeout: 2 * time.Second}, url); err == nil && strings.Contains(body, "Welcome to nginx!") {
			break
		}
	}
	t.Logf("through the cluster IP %s: %.80q (%v)", url, body, err)

	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return false, err.Error()
		}
		ms.Spec.Idle = true
		err := c.Update(ctx, ms)
		return err == nil, fmt.Sprint(err)
	})
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("pods while idle: %v (%v)", testenv.PodSummary(pods), err)
	})
	if _, err := testenv.Get(&http.Client{Timeout: 2 * time.Second}, "http://"+endpoints[0]+"/"); err == nil {
		t.Errorf("%s still answers with the instance idle", endpoints[0])
	}
}

// A container that keeps exiting reaches the kind's status with its last
// exit code: nginx run as a user that may not bind port 80.
func TestAppServiceReportsACrashingContainer(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	app := &appv1.AppService{}
	testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
	app.Spec.Size = ptr.To[int32](1)
	app.Spec.Ports[0].NodePort = 0
	app.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](101), RunAsNonRoot: ptr.To(true)}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	conditionsOf := func() []metav1.Condition { return app.Status.Conditions }
	degraded := waitCondition(t, c, app, conditionsOf, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonCrashLoopBackOff, 2*time.Minute)
	if !strings.Contains(degraded.Message, "last exit code 1") {
		t.Errorf("Degraded message %q does not give the container's last exit code", degraded.Message)
	}
	t.Logf("the AppService says: %s", degraded.Message)
}

// A container that runs but never passes its readiness probe reaches the
// kind's status once the probe's time is up: a MyWeb whose image is
// memcached, which answers nothing on the HTTP port its probe asks.
func TestMyWebReportsAFailingReadinessProbe(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, c := context.Background(), operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	web := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)
	web.Spec.Image = cachev1alpha1.DefaultImage
	web.Spec.NodePortNumber = 30101
	if err := c.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	conditionsOf := func() []metav1.Condition { return web.Status.Conditions }
	degraded := waitCondition(t, c, web, conditionsOf, conditions.Degraded, metav1.ConditionTrue, conditions.ReasonReadinessProbeFailed, 2*time.Minute)
	if !strings.Contains(degraded.Message, "HTTP GET / on port http") {
		t.Errorf("Degraded message %q does not name the probe", degraded.Message)
	}
	t.Logf("%.0f s after the MyWeb was created it says: %s", time.Since(created).Seconds(), degraded.Message)
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), d); err != nil {
		t.Fatal(err)
	}
	if d.Status.ReadyReplicas != 0 {
		t.Errorf("the Deployment has %d ready replicas; the probe cannot pass", d.Status.ReadyReplicas)
	}
}
