package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/api/podsecurity"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/testenv"
)

// TestSamplesRunUnderPodSecurityRestricted: with the operator's default
// profile set to Restricted, every sample becomes Ready in a namespace that
// enforces the restricted Pod Security Standard, so its pods were admitted.
func TestSamplesRunUnderPodSecurityRestricted(t *testing.T) {
	ctx := context.Background()
	c := operatorClient(t)
	objs := samplesInNamespaces(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	namespaces := make([]string, 0, len(objs))
	for _, u := range objs {
		namespaces = append(namespaces, u.GetNamespace())
	}
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{
		Namespaces: namespaces,
		Options:    controller.Options{Defaults: resources.Defaults{SecurityProfile: podsecurity.Restricted}},
	})
	for _, u := range objs {
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, u := range objs {
		waitReadyUnstructured(t, c, u, 3*time.Minute)
	}
}

// samplesInNamespaces reads every sample of config/samples, each placed in a
// new namespace with the given labels, its node ports freed.
func samplesInNamespaces(t *testing.T, nsLabels map[string]string) []*unstructured.Unstructured {
	t.Helper()
	objs := readSamples(t)
	for _, u := range objs {
		// Node ports are cluster-wide and other tests use the samples' own.
		dropNodePorts(u)
		u.SetNamespace(newNamespace(t, clientset(t), nsLabels))
	}
	return objs
}

// readSamples decodes every sample of config/samples.
func readSamples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(mustRepoRoot(), "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		// A RedisEnterpriseCluster is Ready only once Redis really runs
		// and answers: test/realpods covers its sample.
		if filepath.Base(f) == "kustomization.yaml" || filepath.Base(f) == "app_v1alpha1_redisenterprisecluster.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		objs = append(objs, u)
	}
	return objs
}

var lastNodePort atomic.Int64

// dropNodePorts frees a sample from the node ports it asks for, which other
// tests use too: the cluster picks one where the kind allows it, else the
// sample gets a port no other test uses. Decoded YAML holds numbers as
// float64, so fields are found by name, whatever their type.
func dropNodePorts(u *unstructured.Unstructured) {
	if ports, found, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); found {
		for _, p := range ports {
			delete(p.(map[string]any), "nodePort")
		}
		_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "nodePortNumber"); found {
		_ = unstructured.SetNestedField(u.Object, firstFreeNodePort+lastNodePort.Add(1), "spec", "nodePortNumber")
	}
}

// firstFreeNodePort is below the node ports samples and tests name.
const firstFreeNodePort = 32000

// TestDropNodePortsFreesEverySample: no sample keeps a node port of its own
// once freed, so tests that run every sample beside the node-port tests
// cannot take their ports.
func TestDropNodePortsFreesEverySample(t *testing.T) {
	named := 0
	for _, u := range readSamples(t) {
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "nodePortNumber"); found {
			named++
		}
		dropNodePorts(u)
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		for _, p := range ports {
			if np, found := p.(map[string]any)["nodePort"]; found {
				t.Errorf("%s %s keeps spec.ports[].nodePort %v", u.GetKind(), u.GetName(), np)
			}
		}
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "nodePortNumber"); found {
			if port, ok := v.(int64); !ok || port <= firstFreeNodePort {
				t.Errorf("%s %s keeps spec.nodePortNumber %v, want one above %d", u.GetKind(), u.GetName(), v, firstFreeNodePort)
			}
		}
	}
	if named == 0 {
		t.Fatal("no sample names spec.nodePortNumber: the check above checked nothing")
	}
}
