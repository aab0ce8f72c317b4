package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/internal/bundle"
	"github.com/app-operator/app-operator/test/testenv"
)

// The scorecard's checks that need a cluster, on the OLM bundle's CSV: every
// alm-example applies as it is (the API server accepts it, each in a
// namespace of its own), has a spec, and gets a status from the operator
// whose every field has a status descriptor.
func TestBundleExamplesApplyAndGetAStatus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(mustRepoRoot(), "bundle", "manifests", bundle.Package+".clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(raw, csv); err != nil {
		t.Fatal(err)
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	statusDescriptors := map[string][]operatorsv1alpha1.StatusDescriptor{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		statusDescriptors[d.Kind] = d.StatusDescriptors
	}
	c := operatorClient(t)
	cs := clientset(t)
	var objs []*unstructured.Unstructured
	var namespaces []string
	for _, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		ns := newNamespace(t, cs, nil)
		namespaces = append(namespaces, ns)
		u.SetNamespace(ns)
		if spec, ok := u.Object["spec"].(map[string]any); !ok || len(spec) == 0 {
			t.Errorf("example %s %s has no spec", u.GetKind(), u.GetName())
		}
		if err := c.Create(context.Background(), u); err != nil {
			t.Errorf("example %s %s does not apply: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		objs = append(objs, u)
	}
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: namespaces})
	for _, u := range objs {
		testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return len(conds) > 0, fmt.Sprintf("%s %s: status %v", u.GetKind(), u.GetName(), u.Object["status"])
		})
		status, _ := u.Object["status"].(map[string]any)
		for field := range status {
			if !slices.ContainsFunc(statusDescriptors[u.GetKind()], func(d operatorsv1alpha1.StatusDescriptor) bool { return d.Path == field }) {
				t.Errorf("%s %s: status.%s has no status descriptor", u.GetKind(), u.GetName(), field)
			}
		}
	}
	// The examples ask for node ports other tests ask for too.
	for _, u := range objs {
		if err := c.Delete(context.Background(), u); err != nil {
			t.Error(err)
		}
	}
	waitNodePortsFree(t, c, 30002, 30100)
}
