package realpods

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/test/testenv"
)

// The MyWeb seed sample, applied unchanged with the operator running: its
// nginx pod (image `nginx`, pulled from the local registry) serves the page
// of the sample's ConfigMap at 127.0.0.1:<the sample's node port> and at the
// pod's IP, its access log reaches the API server, and a new page reaches
// the node port through a rollout of real pods.
func TestMyWebSampleServesItsPageOnTheNodePort(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c, cs := operatorClient(t), clientset(t)
	ns := testenv.NewNamespace(t, operatorClient(t))
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	web := &operatorv1.MyWeb{}
	testenv.LoadSample(t, "operator_v1_myweb.yaml", web, ns)

	created := time.Now()
	if err := c.Create(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(int(web.Spec.NodePortNumber)) + "/"
	waitServes(t, url, web.Spec.PageContentHtml, 3*time.Minute)
	t.Logf("the page was served at %s %.1f s after the MyWeb was created", url, time.Since(created).Seconds())

	pod := runningPod(t, cs, ns, "app="+web.Name)
	waitServes(t, "http://"+net.JoinHostPort(pod.Status.PodIP, "80")+"/", web.Spec.PageContentHtml, 30*time.Second)

	// The requests above are in nginx's access log, read through the API
	// server and the kubelet as `kubectl logs` reads it.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		return err == nil && strings.Contains(string(logs), "GET / HTTP/1.1"), fmt.Sprintf("logs %q (%v)", logs, err)
	})

	// A new page rolls the Deployment; the node port serves it once the new
	// pod is ready, and no request fails in between: the old pod serves
	// until the new one is ready.
	newPage := "<html><body><h1>Second edition</h1></body></html>\n"
	tr := startTraffic(url, "Second edition")
	changed := time.Now()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(web), web); err != nil {
			return false, err.Error()
		}
		web.Spec.PageContentHtml = newPage
		err := c.Update(context.Background(), web)
		return err == nil, fmt.Sprint(err)
	})
	waitServes(t, url, newPage, 3*time.Minute)
	// A few more requests once the new page is served everywhere.
	time.Sleep(time.Second)
	requests, failures := tr.Stop()
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed while the page changed: %q", len(failures), requests, failures)
	}
	t.Logf("the new page was served %.1f s after the change; %d requests during it, %d failed",
		tr.SawMarker().Sub(changed).Seconds(), requests, len(failures))
}

// The AppService sample (two replicas of nginx:1.7.9, node port 30002):
// the image's own default page is served on the node port and by each pod.
func TestAppServiceSampleServesNginxOnItsNodePort(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c, cs := operatorClient(t), clientset(t)
	ns := testenv.NewNamespace(t, operatorClient(t))
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	app := &appv1.AppService{}
	testenv.LoadSample(t, "app_v1_appservice.yaml", app, ns)
	if err := c.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	page := func(url string) (bool, string) {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), "<h1>Welcome to nginx!</h1>"),
			fmt.Sprintf("%s: %d %q (%v)", url, resp.StatusCode, body, err)
	}
	nodePort := "http://127.0.0.1:" + strconv.Itoa(int(app.Spec.Ports[0].NodePort)) + "/"
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) { return page(nodePort) })
	var pods *corev1.PodList
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		var err error
		pods, err = cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=Running"})
		return err == nil && len(pods.Items) == int(ptr.Deref(app.Spec.Size, 0)), fmt.Sprintf("running pods %s (%v)", testenv.PodSummary(pods), err)
	})
	for _, p := range pods.Items {
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			return page("http://" + net.JoinHostPort(p.Status.PodIP, "80") + "/")
		})
	}
}

// waitServes waits until GET url answers 200 with exactly want.
func waitServes(t *testing.T, url, want string, timeout time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	testenv.Eventually(t, timeout, func() (bool, string) {
		resp, err := hc.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK && string(body) == want,
			fmt.Sprintf("%s: %d %q (%v)", url, resp.StatusCode, body, err)
	})
}

func runningPod(t *testing.T, cs kubernetes.Interface, ns, selector string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Status.PodIP != "" {
				pod = p
				return true, ""
			}
		}
		return false, fmt.Sprint(testenv.PodSummary(pods))
	})
	return pod
}

// metrics-server runs with the node: an HPA reads the real CPU use of an
// nginx Deployment, and load on its NodePort scales it out.
func TestHPASeesRealCPUAndScalesOutUnderLoad(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx, cs := context.Background(), clientset(t)
	ns := testenv.NewNamespace(t, operatorClient(t))
	labels := map[string]string{"app": "busy"}
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: "nginx:1.7.9",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
				}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "busy"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    3,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50),
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hpa := func() *autoscalingv2.HorizontalPodAutoscaler {
		h, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "busy", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	cpu := func(h *autoscalingv2.HorizontalPodAutoscaler) *int32 {
		for _, m := range h.Status.CurrentMetrics {
			if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
				return m.Resource.Current.AverageUtilization
			}
		}
		return nil
	}
	start := time.Now()
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		h := hpa()
		return cpu(h) != nil, fmt.Sprintf("HPA status %+v", h.Status)
	})
	t.Logf("the HPA read the pods' CPU use %.0f s after it was created", time.Since(start).Seconds())

	// Load from four clients on loopback, bounded by the scale-out or two
	// minutes, whichever comes first.
	url := "http://127.0.0.1:" + strconv.Itoa(int(svc.Spec.Ports[0].NodePort)) + "/"
	loadCtx, stopLoad := context.WithTimeout(ctx, 2*time.Minute)
	defer stopLoad()
	requests := make(chan int, 4)
	for range 4 {
		go func() {
			hc, n := &http.Client{Timeout: 2 * time.Second}, 0
			for loadCtx.Err() == nil {
				if resp, err := hc.Get(url); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					n++
				}
			}
			requests <- n
		}()
	}
	loadStart := time.Now()
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		h := hpa()
		return h.Status.DesiredReplicas > 1, fmt.Sprintf("desired %d, CPU %v%%", h.Status.DesiredReplicas, ptr.Deref(cpu(h), -1))
	})
	h := hpa()
	stopLoad()
	total := 0
	for range 4 {
		total += <-requests
	}
	t.Logf("under load (%d requests) the HPA read %d%% CPU and asked for %d replicas after %.0f s",
		total, ptr.Deref(cpu(h), -1), h.Status.DesiredReplicas, time.Since(loadStart).Seconds())
}

func operatorClient(t *testing.T) client.Client { return testenv.Client(t, testCluster.Config()) }

func clientset(t *testing.T) *kubernetes.Clientset { return testenv.Clientset(t, testCluster.Config()) }
