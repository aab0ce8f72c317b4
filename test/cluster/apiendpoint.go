package cluster

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// exposeAPIServerToPods gives the kubernetes Service the endpoint pods
// reach the API server at, as in any cluster: the node's bridge address, on
// the API server's port (it listens on every address with real pods). A
// client in a pod (the operator's own, say) then finds it through
// KUBERNETES_SERVICE_HOST and the cluster CA its ServiceAccount token comes
// with.
func (c *Cluster) exposeAPIServerToPods(ctx context.Context) error {
	u, err := url.Parse(c.host)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	const name = "kubernetes"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "app-operator-local-cluster"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.node.hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", metav1.NamespaceDefault, name, err)
	}
	return nil
}
