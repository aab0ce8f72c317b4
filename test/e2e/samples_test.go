package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// TestSamplesApplyIntoOneNamespaceAndBecomeReady applies config/samples as
// the README tells a user to, `kubectl apply -n NAMESPACE -k
// config/samples`, and every sample becomes Ready there: the
// MicroServiceDeploy quota limits only the pods of MicroServiceDeploys, so
// the Memcached and the other samples' pods, which declare no CPU limit,
// are created.
func TestSamplesApplyIntoOneNamespaceAndBecomeReady(t *testing.T) {
	c := operatorClient(t)
	ns := newNamespace(t, clientset(t), nil)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	// The samples ask for these node ports; other tests of this cluster
	// may still be letting them go.
	waitNodePortsFree(t, c, 30002, 30003, 30100)

	kubectl(t, "apply", "-n", ns, "-k", filepath.Join(mustRepoRoot(), "config", "samples"))

	for _, s := range []struct{ group, version, kind, name string }{
		{"app.example.com", "v1", "AppService", "nginx-app"},
		{"app.example.com", "v1", "WebService", "nginx-web"},
		{"custom.ops", "v1", "MicroServiceDeploy", "ms-sample-v1s0"},
		{"cache.example.com", "v1alpha1", "Memcached", "example-memcached"},
		{"operator.k8s-summit.org", "v1", "MyWeb", "myweb"},
	} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: s.group, Version: s.version, Kind: s.kind})
		u.SetNamespace(ns)
		u.SetName(s.name)
		waitReadyUnstructured(t, c, u, 3*time.Minute)
	}
}

// waitNodePortsFree waits until no Service of the cluster holds the ports.
func waitNodePortsFree(t *testing.T, c client.Client, ports ...int32) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		svcs := &corev1.ServiceList{}
		if err := c.List(context.Background(), svcs); err != nil {
			return false, err.Error()
		}
		for _, svc := range svcs.Items {
			for _, p := range svc.Spec.Ports {
				for _, want := range ports {
					if p.NodePort == want {
						return false, fmt.Sprintf("Service %s/%s holds node port %d", svc.Namespace, svc.Name, want)
					}
				}
			}
		}
		return true, ""
	})
}
