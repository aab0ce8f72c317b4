package realpods

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The cluster DNS answers for Services and for a pod's stable name under a
// headless Service (`<hostname>.<subdomain>.<namespace>.svc`, what a
// StatefulSet's members use to find each other), and the kubelet gives the
// pods that nameserver and the cluster's search path.
func TestClusterDNSNamesServicesAndPods(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx := context.Background()
	cs := clientset(t)
	ns := testenv.NewNamespace(t, operatorClient(t))

	labels := map[string]string{"app": "dns-check"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "peers", Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 labels,
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "member-0", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			Hostname:  "member-0",
			Subdomain: svc.Name,
			Containers: []corev1.Container{{
				Name: "nginx", Image: "nginx:1.7.9",
				Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := runningPod(t, cs, ns, "app=dns-check")

	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(testCluster.DNSAddress(), "53"))
	}}
	name := fmt.Sprintf("member-0.peers.%s.svc.%s", ns, cluster.ClusterDomain)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := resolver.LookupHost(ctx, name)
		return err == nil && len(addrs) == 1 && addrs[0] == running.Status.PodIP,
			fmt.Sprintf("%s resolves to %v (%v), want the pod's IP %s", name, addrs, err, running.Status.PodIP)
	})
	// The API server's own Service, by its short cluster name.
	kubernetesSvc, err := cs.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := resolver.LookupHost(ctx, "kubernetes.default.svc."+cluster.ClusterDomain)
	if err != nil || len(addrs) != 1 || addrs[0] != kubernetesSvc.Spec.ClusterIP {
		t.Errorf("kubernetes.default.svc resolves to %v (%v), want %s", addrs, err, kubernetesSvc.Spec.ClusterIP)
	}

	// The pod's resolv.conf, as containerd wrote it into its sandbox.
	confs, err := filepath.Glob(filepath.Join(testCluster.Dir, "realnode", "containerd", "root",
		"io.containerd.grpc.v1.cri", "sandboxes", "*", "resolv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	search := "search " + ns + ".svc." + cluster.ClusterDomain + " svc." + cluster.ClusterDomain + " " + cluster.ClusterDomain
	var found []string
	for _, f := range confs {
		data, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(data), search) {
			found = append(found, string(data))
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "nameserver "+testCluster.DNSAddress()) {
		t.Errorf("resolv.conf of the pod in %s (among %d sandboxes): %q, want one with %q and nameserver %s",
			ns, len(confs), found, search, testCluster.DNSAddress())
	}
}
