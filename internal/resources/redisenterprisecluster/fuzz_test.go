package redisenterprisecluster

import (
	"strings"
	"testing"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/fuzzspec"
)

// FuzzBuild builds the children of RedisEnterpriseClusters whose specs are
// filled from the fuzz input (see fuzzspec.Decode): the builder never
// panics, refuses only resources it cannot read (a value that is no
// quantity, a request above its limit) and node counts the API refuses, and otherwise builds the same
// children for the same input, owned by the resource, whose selectors
// match the pods, with a role file for every node, none of which boots it
// as a primary.
// The seed corpus is in testdata/fuzz/FuzzBuild.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &redisv1alpha1.RedisEnterpriseCluster{}
		fuzzspec.Decode(data, "ns", r)
		r.UID = "uid-1"
		owner := resources.OwnerOf(r, redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"))
		children, err := Build(owner, &r.Spec, Input{Password: "pw", Primary: r.Status.Primary})
		if err != nil {
			n := Nodes(&r.Spec)
			if _, rerr := Resources(r.Spec.RedisEnterpriseNodeResources); rerr == nil && n >= 3 && n <= 9 && n%2 == 1 {
				t.Fatalf("%+v: refused (%v) though its resources read", r.Spec, err)
			}
			return
		}
		objs := children.Objects()
		again, _ := Build(owner, &r.Spec, Input{Password: "pw", Primary: r.Status.Primary})
		if err := fuzzspec.Same(objs, again.Objects()); err != nil {
			t.Fatal(err)
		}
		template := children.StatefulSet.Spec.Template.Labels
		for k, v := range children.StatefulSet.Spec.Selector.MatchLabels {
			if template[k] != v {
				t.Fatalf("the StatefulSet selects %s=%s, which its pods lack", k, v)
			}
		}
		for _, svc := range []*corev1ac.ServiceApplyConfiguration{children.NodesService, children.PrimaryService, children.UIService} {
			if !strings.HasPrefix(*svc.Name, r.Name) || len(svc.OwnerReferences) != 1 || *svc.OwnerReferences[0].UID != "uid-1" {
				t.Fatalf("Service %s: name or owner %+v", *svc.Name, svc.OwnerReferences)
			}
			pods := template
			if svc == children.UIService && children.Console != nil {
				pods = children.Console.Deployment.Spec.Template.Labels
			}
			for k, v := range svc.Spec.Selector {
				if k != RoleLabel && pods[k] != v {
					t.Fatalf("Service %s selects %s=%s, which the pods lack", *svc.Name, k, v)
				}
			}
		}
		if got := *children.StatefulSet.Spec.Replicas; int(got) != Nodes(&r.Spec) {
			t.Fatalf("%d replicas for %d nodes", got, Nodes(&r.Spec))
		}
		for i := range Nodes(&r.Spec) {
			role, ok := children.ConfigMap.Data[RoleFile(PodName(r.Name, i))]
			if !ok {
				t.Fatalf("no role file for node %d", i)
			}
			if !strings.Contains(role, "replicaof ") {
				t.Fatalf("node %d boots as a primary: %q", i, role)
			}
		}
	})
}
