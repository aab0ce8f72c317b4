package install

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

const (
	release   = "app-operator"
	namespace = "app-operator-system"
	// leaseName is the manager's leader-election Lease.
	leaseName = "app-operator.app.example.com"
	samplesNS = "demo"
)

// A user's first day: the chart installed with the operator's image, two
// replicas under leader election, in a namespace that enforces the
// restricted Pod Security Standard; the samples become Ready (or say why
// not) with the operator in-cluster; its metrics answer only an authorised
// reader; the leader's pod deleted hands over without a write from the
// standby before it holds the Lease; an upgrade to a new image tag rewrites
// no child; an uninstall leaves the CRDs, the resources and their children.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	cs := testenv.Clientset(t, testCluster.Config())
	c := testenv.Client(t, testCluster.Config())
	pushImage(t, ctx, imageTag)
	reportImageSize(t)

	createNamespace(t, cs, namespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"})
	installed := time.Now()
	helm(t, "install", release, "charts/app-operator", "--namespace", namespace,
		"--set", "image.repository="+imageRepository, "--set", "image.tag="+imageTag, "--set", "replicaCount=2",
		"--wait", "--timeout", "3m")
	pods := managerPods(t, cs, 2)
	t.Logf("helm install: %d manager pods Ready %.1f s after the install began", len(pods), time.Since(installed).Seconds())
	for _, p := range pods {
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || p.Spec.SecurityContext.RunAsNonRoot == nil || !*p.Spec.SecurityContext.RunAsNonRoot {
			t.Errorf("pod %s: security context %+v, pod %+v: want a read-only root filesystem and a non-root user", p.Name, sc, p.Spec.SecurityContext)
		}
	}

	leader := leaderPod(t, cs)
	applySamples(t, cs)
	waitSamples(t, c)
	// Ready once its pod is; kube-proxy opens the node port moments later.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		page, err := testenv.Get(http.DefaultClient, "http://127.0.0.1:30100/")
		return err == nil && strings.Contains(page, "Hello, World!"), fmt.Sprintf("the MyWeb sample's node port answered %q (%v)", page, err)
	})
	// Exactly one replica reconciles: every write to the samples' namespace
	// is the leader's.
	byPod := writesByPod(t, samplesNS, time.Time{})
	for pod := range byPod {
		if pod != leader {
			t.Errorf("pod %s, not the leader %s, wrote to %s: %q", pod, leader, samplesNS, byPod[pod])
		}
	}
	if len(byPod[leader]) == 0 {
		t.Errorf("the leader %s made no write to %s", leader, samplesNS)
	}

	checkMetrics(t, ctx, cs, pods)
	checkSelectors(t, cs, pods)
	reportRSS(t, ctx, pods)

	// The leader's pod deleted: the standby takes the Lease, and writes
	// nothing before.
	deleted := time.Now()
	if err := cs.CoreV1().Pods(namespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var standby string
	var acquired time.Time
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		l, err := cs.CoordinationV1().Leases(namespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := holderPod(l)
		if holder == "" || holder == leader || l.Spec.AcquireTime == nil {
			return false, fmt.Sprintf("Lease held by %q", holder)
		}
		standby, acquired = holder, l.Spec.AcquireTime.Time
		return true, ""
	})
	from := "a new pod"
	if slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == standby }) {
		from = "the other replica"
	}
	t.Logf("%s, %s, took the Lease %.1f s after the leader's pod was deleted", from, standby, acquired.Sub(deleted).Seconds())
	for _, w := range writesOf(t, standby, "") {
		// Leader election's own writes, and the start-up permission
		// check's reviews, which change nothing, come before.
		if w.at.Before(acquired) && w.resource != "leases" && w.resource != "events" && !strings.HasSuffix(w.resource, "reviews") {
			t.Errorf("%s wrote %s before it held the Lease (at %s)", standby, w, acquired.Format(time.RFC3339Nano))
		}
	}

	// An upgrade to a new tag of the image rolls the manager and rewrites
	// no child: the new leader finds every child as it wants it.
	pushImage(t, ctx, imageTag+"-2")
	readySince := readyTransitions(t, c)
	upgraded := time.Now()
	helm(t, "upgrade", release, "charts/app-operator", "--namespace", namespace, "--reuse-values",
		"--set", "image.tag="+imageTag+"-2", "--wait", "--timeout", "3m")
	pods = managerPods(t, cs, 2)
	for _, p := range pods {
		if img := p.Spec.Containers[0].Image; img != imageRepository+":"+imageTag+"-2" {
			t.Errorf("after the upgrade, pod %s runs %s", p.Name, img)
		}
	}
	newLeader := leaderPod(t, cs)
	childWrites := checkUpgradeChangedNothing(t, c, readySince, upgraded)
	t.Logf("helm upgrade: rolled in %.1f s, new leader %s, %d child writes", time.Since(upgraded).Seconds(), newLeader, childWrites)

	// Uninstall: the manager goes, the CRDs, resources and children stay.
	helm(t, "uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m")
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("manager pods after uninstall: %v (%v)", testenv.PodSummary(pods), err)
	})
	for _, crd := range []string{"appservices.app.example.com", "webservices.app.example.com", "memcacheds.cache.example.com", "microservicedeploys.custom.ops", "mywebs.operator.k8s-summit.org"} {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, obj); err != nil {
			t.Errorf("CRD %s after uninstall: %v", crd, err)
		}
	}
	waitSamples(t, c)
	for _, name := range []string{"nginx-app", "nginx-web", "example-memcached", "myweb"} {
		if _, err := cs.AppsV1().Deployments(samplesNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Deployment %s after uninstall: %v", name, err)
		}
	}
}

// The kustomize tree, applied as its README says with the image set, runs
// the manager in the namespace it creates (restricted), Ready through its
// probes.
func TestKustomizeInstall(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	cs := testenv.Clientset(t, testCluster.Config())
	pushImage(t, ctx, imageTag)
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(root, "bin", "install-overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(overlay) })
	// config/manager names the image app-operator:latest.
	kustomization := fmt.Sprintf("resources:\n- ../../config/default\nnamespace: %s-k\nimages:\n- name: app-operator\n  newName: %s\n  newTag: %s\n", namespace, imageRepository, imageTag)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "--server-side", "--force-conflicts", "-k", overlay)
	kubectl(t, "-n", namespace+"-k", "rollout", "status", "deployment/app-operator-controller-manager", "--timeout=3m")
	ns, err := cs.CoreV1().Namespaces().Get(ctx, namespace+"-k", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v: want the restricted standard enforced", ns.Labels)
	}
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func helm(t *testing.T, args ...string) {
	t.Helper()
	bin := os.Getenv("HELM")
	root, _ := cluster.RepoRoot()
	if bin == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*"))
		if len(matches) == 0 {
			t.Fatal("helm not found: run `make helm` (or set HELM)")
		}
		bin = matches[len(matches)-1]
	}
	cmd := exec.Command(bin, append(args, "--kubeconfig", testCluster.Kubeconfig)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func kubectl(t *testing.T, args ...string) {
	t.Helper()
	root, _ := cluster.RepoRoot()
	cmd := exec.Command(filepath.Join(testCluster.BinDir(), "kubectl"), append(args, "--kubeconfig", testCluster.Kubeconfig)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// managerPods waits until n manager pods run, Ready, and returns them.
func managerPods(t *testing.T, cs kubernetes.Interface, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=app-operator"})
		if err != nil {
			return false, err.Error()
		}
		ready = nil
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready = append(ready, p)
				}
			}
		}
		return len(ready) == n && len(pods.Items) == n, fmt.Sprintf("manager pods %v", testenv.PodSummary(pods))
	})
	return ready
}

func holderPod(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return pod
}

func leaderPod(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	var leader string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		l, err := cs.CoordinationV1().Leases(namespace).Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		leader = holderPod(l)
		_, err = cs.CoreV1().Pods(namespace).Get(context.Background(), leader, metav1.GetOptions{})
		return err == nil, fmt.Sprintf("Lease held by %q (%v)", leader, err)
	})
	return leader
}

func applySamples(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	createNamespace(t, cs, samplesNS, nil)
	kubectl(t, "apply", "-n", samplesNS, "-k", "config/samples")
}

// samples are the resources `kubectl apply -k config/samples` creates, and
// whether each can become Ready on the local node.
var samples = []struct {
	group, version, kind, name string
	ready                      bool
}{
	{"app.example.com", "v1", "AppService", "nginx-app", true},
	{"app.example.com", "v1", "WebService", "nginx-web", true},
	{"cache.example.com", "v1alpha1", "Memcached", "example-memcached", true},
	{"operator.k8s-summit.org", "v1", "MyWeb", "myweb", true},
	{"custom.ops", "v1", "MicroServiceDeploy", "ms-sample-v1s0", false},
}

// waitSamples waits until every sample that can run is Ready and the
// MicroServiceDeploy sample says why it cannot.
func waitSamples(t *testing.T, c client.Client) {
	t.Helper()
	for _, s := range samples {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: s.group, Version: s.version, Kind: s.kind})
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: samplesNS, Name: s.name}, obj); err != nil {
				return false, err.Error()
			}
			ready, degraded := condition(obj, "Ready"), condition(obj, "Degraded")
			if s.ready {
				return ready["status"] == "True", fmt.Sprintf("%s %s: Ready %v", s.kind, s.name, ready)
			}
			return ready["status"] == "False" && degraded["status"] == "True", fmt.Sprintf("%s %s: Degraded %v", s.kind, s.name, degraded)
		})
	}
}

// readyTransitions returns, by sample, its Ready condition's status and
// last transition time.
func readyTransitions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range samples {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: s.group, Version: s.version, Kind: s.kind})
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: samplesNS, Name: s.name}, obj); err != nil {
			t.Fatal(err)
		}
		ready := condition(obj, "Ready")
		out[s.kind+"/"+s.name] = fmt.Sprintf("%v since %v", ready["status"], ready["lastTransitionTime"])
	}
	return out
}

func condition(obj *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m
		}
	}
	return map[string]any{}
}

// checkMetrics: the metrics endpoint answers 200 to a token of a
// ServiceAccount bound to the metrics reader role, 401 without a token and
// 403 to a ServiceAccount without the role.
func checkMetrics(t *testing.T, ctx context.Context, cs kubernetes.Interface, pods []corev1.Pod) {
	t.Helper()
	for _, sa := range []string{"scraper", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts(samplesNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: samplesNS}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		cfg, err := testCluster.ServiceAccountConfig(ctx, samplesNS, sa)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.BearerToken
	}
	port := 0
	for _, p := range pods[0].Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			port = int(p.ContainerPort)
		}
	}
	url := "https://" + net.JoinHostPort(pods[0].Status.PodIP, fmt.Sprint(port)) + "/metrics"
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"the metrics reader", token("scraper"), http.StatusOK},
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the role", token("stranger"), http.StatusForbidden},
	} {
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == tc.want, fmt.Sprintf("%s: %s for %s, want %d", url, resp.Status, tc.who, tc.want)
		})
	}
}

// checkSelectors: the chart's ServiceMonitor selects the live metrics
// Service and names one of its ports, and its NetworkPolicy selects the
// live manager pods and opens their metrics port.
func checkSelectors(t *testing.T, cs kubernetes.Interface, pods []corev1.Pod) {
	t.Helper()
	root, _ := cluster.RepoRoot()
	bin := os.Getenv("HELM")
	if bin == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "bin", "helm-*"))
		bin = matches[len(matches)-1]
	}
	cmd := exec.Command(bin, "template", release, "charts/app-operator", "--namespace", namespace,
		"--set", "serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true", "--show-only", "templates/metrics.yaml")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	svc, err := cs.CoreV1().Services(namespace).Get(context.Background(), release+"-controller-manager-metrics-service", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	portNames := make([]string, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		portNames = append(portNames, p.Name)
	}
	metricsPort := int64(0)
	for _, p := range pods[0].Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			metricsPort = int64(p.ContainerPort)
		}
	}
	for _, doc := range strings.Split(string(out), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil || obj.GetKind() == "" {
			continue
		}
		switch obj.GetKind() {
		case "ServiceMonitor":
			sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
			if !subset(sel, svc.Labels) {
				t.Errorf("the ServiceMonitor selects %v; the metrics Service has labels %v", sel, svc.Labels)
			}
			eps, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
			for _, ep := range eps {
				if port := ep.(map[string]any)["port"]; !slices.Contains(portNames, fmt.Sprint(port)) {
					t.Errorf("the ServiceMonitor scrapes port %v; the Service's ports are %v", port, portNames)
				}
			}
		case "NetworkPolicy":
			sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "podSelector", "matchLabels")
			for _, p := range pods {
				if !subset(sel, p.Labels) {
					t.Errorf("the NetworkPolicy selects %v; manager pod %s has labels %v", sel, p.Name, p.Labels)
				}
			}
			rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ingress")
			for _, r := range rules {
				ports, _, _ := unstructured.NestedSlice(r.(map[string]any), "ports")
				for _, p := range ports {
					if got := fmt.Sprint(p.(map[string]any)["port"]); got != fmt.Sprint(metricsPort) {
						t.Errorf("the NetworkPolicy opens port %v; the manager's metrics port is %d", p.(map[string]any)["port"], metricsPort)
					}
				}
			}
		}
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// reportRSS logs the manager pods' memory as `kubectl top pod` shows it
// (the working set metrics-server reads from the kubelet).
func reportRSS(t *testing.T, ctx context.Context, pods []corev1.Pod) {
	t.Helper()
	c := testenv.Client(t, testCluster.Config())
	for _, p := range pods {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(schema.GroupVersionKind{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetrics"})
		testenv.Eventually(t, 90*time.Second, func() (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Name}, m)
			return err == nil, fmt.Sprint(err)
		})
		containers, _, _ := unstructured.NestedSlice(m.Object, "containers")
		for _, ct := range containers {
			usage, _, _ := unstructured.NestedStringMap(ct.(map[string]any), "usage")
			cpu, mem := resource.MustParse(usage["cpu"]), resource.MustParse(usage["memory"])
			t.Logf("kubectl top: pod %s container %v: cpu %dm, memory %.1f MiB", p.Name, ct.(map[string]any)["name"], cpu.MilliValue(), float64(mem.Value())/(1<<20))
		}
	}
}

func reportImageSize(t *testing.T) {
	t.Helper()
	st, err := os.Stat(imageArchive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s:%s: archive %.1f MiB", imageRepository, imageTag, float64(st.Size())/(1<<20))
}

// write is one write in the audit log.
type write struct {
	at                            time.Time
	verb, resource, sub, ns, name string
}

func (w write) String() string {
	r := w.resource
	if w.sub != "" {
		r += "/" + w.sub
	}
	return fmt.Sprintf("%s %s %s/%s", w.verb, r, w.ns, w.name)
}

// writesOf returns the writes the manager pod pod made (in namespace ns
// when not empty), read from the audit log.
func writesOf(t *testing.T, pod, ns string) []write {
	t.Helper()
	var out []write
	for _, e := range auditEvents(t) {
		if e.pod == pod && (ns == "" || e.w.ns == ns) {
			out = append(out, e.w)
		}
	}
	return out
}

// writesByPod returns, by manager pod, the writes to namespace ns since
// since, as strings.
func writesByPod(t *testing.T, ns string, since time.Time) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range auditEvents(t) {
		if e.pod != "" && e.w.ns == ns && !e.w.at.Before(since) {
			out[e.pod] = append(out[e.pod], e.w.String())
		}
	}
	return out
}

type auditEvent struct {
	pod string
	w   write
}

// auditEvents reads the writes of the operator's ServiceAccount from the
// audit log, with the pod each token was bound to.
func auditEvents(t *testing.T) []auditEvent {
	t.Helper()
	f, err := os.Open(testCluster.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Verb string `json:"verb"`
			User struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"user"`
			ObjectRef *struct {
				Resource, Subresource, Namespace, Name string
			} `json:"objectRef"`
			StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ObjectRef == nil {
			continue
		}
		if !strings.HasPrefix(e.User.Username, "system:serviceaccount:"+namespace+":") {
			continue
		}
		pod := ""
		if names := e.User.Extra["authentication.kubernetes.io/pod-name"]; len(names) == 1 {
			pod = names[0]
		}
		out = append(out, auditEvent{pod: pod, w: write{at: e.StageTimestamp.Time, verb: e.Verb, resource: e.ObjectRef.Resource,
			sub: e.ObjectRef.Subresource, ns: e.ObjectRef.Namespace, name: e.ObjectRef.Name}})
	}
	return out
}

// checkUpgradeChangedNothing waits for the samples to be Ready after an
// upgrade that began at upgraded, and checks that none of their Ready
// conditions changed from readySince and that the operator wrote no child
// since (statuses and events aside); it returns the count of child writes.
func checkUpgradeChangedNothing(t *testing.T, c client.Client, readySince map[string]string, upgraded time.Time) int {
	t.Helper()
	waitSamples(t, c)
	// Every sample stayed as it was: its Ready condition never changed.
	if after := readyTransitions(t, c); !maps.Equal(after, readySince) {
		t.Errorf("Ready conditions changed across the upgrade: before %v, after %v", readySince, after)
	}
	// The new leader has looked at every sample once it holds the Lease
	// and its caches are in sync; a few seconds more for its passes.
	time.Sleep(10 * time.Second)
	var childWrites []string
	for pod, ws := range writesByPod(t, samplesNS, upgraded) {
		for _, w := range ws {
			if !strings.Contains(w, "/status") && !strings.HasPrefix(w, "create events") {
				childWrites = append(childWrites, pod+": "+w)
			}
		}
	}
	if len(childWrites) > 0 {
		t.Errorf("after the upgrade, the operator rewrote children:\n%s", strings.Join(childWrites, "\n"))
	}
	return len(childWrites)
}
