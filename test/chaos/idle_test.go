package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/testenv"
)

// idleWindow is how long a converged namespace is watched for writes.
const idleWindow = 60 * time.Second

// TestIdleStability: once every sample is Ready, no resource and no child
// changes for a minute (of a child whose status Kubernetes writes, its
// spec) and the operator makes no write at all; a status that keeps being
// rewritten (a hot loop) fails it.
func TestIdleStability(t *testing.T) {
	t.Parallel()
	scenario(t, famIdle)
	c, ns, op, _ := readyInProcess(t)
	// Pods turning Ready move the status for a while after Ready: the
	// operator is done once every rollout is, and it has reported on it.
	testenv.WaitRolledOut(t, c, ns, 2*time.Minute)
	op.Mutations.WaitQuiet(t, ns, 5*time.Second, time.Minute)
	waitClean(t, c, ns, famIdle, 10*time.Second)

	before := versions(t, c, ns)
	writesBefore := len(op.Mutations.In(ns)) + len(op.Mutations.In(""))
	start := time.Now()
	for time.Since(start) < idleWindow {
		time.Sleep(5 * time.Second)
		checkInvariants(t, c, ns)
	}
	after := versions(t, c, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed while idle: resourceVersion %s -> %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared while idle", k)
		}
	}
	writes := append(op.Mutations.In(ns), op.Mutations.In("")...)
	if n := len(writes) - writesBefore; n != 0 {
		t.Errorf("the operator made %d writes while idle: %v", n, writes[writesBefore:])
	}
	timing("idle stability: %d resources and children unchanged for %s, %d operator writes", len(before), idleWindow, len(writes)-writesBefore)
}

// versions returns the resourceVersion of every resource and child in ns
// (of a child whose status Kubernetes writes, its generation).
func versions(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	crs, err := customResources(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range crs {
		out[kindOf(o)+" "+o.GetName()] = o.GetResourceVersion()
	}
	for _, o := range listAll(t, c, ns, append(childTypes, &corev1.ResourceQuotaList{})) {
		if o.GetLabels()["app.kubernetes.io/managed-by"] == "" && o.GetName() != "microservicedeploy-quota" {
			continue // the namespace's default ServiceAccount, kube-root-ca.crt
		}
		switch q := o.(type) {
		case *policyv1.PodDisruptionBudget, *appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler:
			// Kubernetes' own controllers rewrite these statuses on their
			// own schedule (the disruption controller the pods it counts,
			// the deployment controller the replicas it sees, the HPA
			// controller its metrics and conditions): only the spec's
			// generation is the operator's, and every write of the
			// operator's is counted apart.
			out[kindOf(o)+" "+o.GetName()] = fmt.Sprintf("generation %d", o.GetGeneration())
			continue
		case *corev1.ResourceQuota:
			// The quota controller rewrites status.used as pods come and
			// go, and a quota has no generation: its spec is compared.
			spec, err := json.Marshal(q.Spec)
			if err != nil {
				t.Fatal(err)
			}
			out[kindOf(o)+" "+o.GetName()] = "spec " + string(spec)
			continue
		}
		out[kindOf(o)+" "+o.GetName()] = o.GetResourceVersion()
	}
	return out
}
