package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The real node's metrics-server, serving the metrics.k8s.io API.

// The name and namespace of metrics-server's Service, which the APIService
// names.
const metricsServerName, metricsServerNamespace = "metrics-server", metav1.NamespaceSystem

// startMetricsServer runs metrics-server as a process on the node's address
// and registers it as the metrics.k8s.io API: a Service without selector
// whose one endpoint is that address, and an APIService. The kubelet's
// serving certificate is self-signed, and so is metrics-server's.
func (c *Cluster) startMetricsServer(ctx context.Context, kubeconfig, caCert string, port int) error {
	n := c.node
	if err := n.run("metrics-server",
		"--secure-port="+strconv.Itoa(port),
		"--bind-address="+n.hostIP,
		"--cert-dir="+filepath.Join(n.dir, "metrics-server-certs"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--requestheader-client-ca-file="+caCert,
		"--kubelet-insecure-tls",
		// The kubelet's port is the one its Node reports, not 10250.
		"--kubelet-use-node-status-port",
		"--kubelet-preferred-address-types=InternalIP",
		"--metric-resolution=15s",
		"--kubelet-request-timeout=5s",
		"--v=1",
	); err != nil {
		return err
	}
	if err := c.createMetricsService(ctx, port); err != nil {
		return err
	}
	return c.registerMetricsAPI(ctx)
}

// createMetricsService creates metrics-server's Service, without selector,
// and the EndpointSlice that gives it metrics-server's address and port.
func (c *Cluster) createMetricsService(ctx context.Context, port int) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	const name, ns = metricsServerName, metricsServerNamespace
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", ns, name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "app-operator-local-cluster"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.node.hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", ns, name, err)
	}
	return nil
}

// registerMetricsAPI registers metrics-server's Service as the
// metrics.k8s.io API and waits until the API server finds it Available.
func (c *Cluster) registerMetricsAPI(ctx context.Context) error {
	const name, ns = metricsServerName, metricsServerNamespace
	n := c.node
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group":                 "metrics.k8s.io",
			"version":               "v1beta1",
			"service":               map[string]any{"namespace": ns, "name": name, "port": int64(443)},
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
	if _, err := apiServices.Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create APIService v1beta1.metrics.k8s.io: %w", err)
	}
	return n.poll(ctx, time.Minute, "APIService v1beta1.metrics.k8s.io", func() error {
		got, err := apiServices.Get(ctx, "v1beta1.metrics.k8s.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" {
				if m["status"] == "True" {
					return nil
				}
				return fmt.Errorf("Available=%v: %v", m["status"], m["message"]) //nolint:staticcheck // The condition's name, as the API writes it.
			}
		}
		return errors.New("no Available condition yet")
	})
}
