package controller_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The controller tests run the operator against a real kube-apiserver (the
// APIOnly profile): no built-in controllers run, so a test that needs a
// Deployment to be available writes its status itself.

var (
	testCluster *cluster.Cluster
	k8s         client.Client
	repoRoot    string
)

// settleWithin is how long a test waits for an outcome the operator
// reaches in seconds on an idle machine: generous, for a loaded one, where
// a manager alone may take ten seconds to start.
const settleWithin = time.Minute

func TestMain(m *testing.M) {
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repoRoot = root
	os.Exit(testenv.RunAgainstAPIServer(m, func(c *cluster.Cluster, kc client.Client) { testCluster, k8s = c, kc }, dryRunAccepted))
}

// startOperator creates a namespace and runs the operator, watching only it.
func startOperator(t *testing.T) (string, *testenv.Operator) {
	t.Helper()
	ns := testenv.NewNamespace(t, k8s)
	return ns, testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
}

func get(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %T %s: %v", obj, obj.GetName(), err)
	}
}

// conditionsOf is implemented by every kind.
type conditionsOf interface {
	client.Object
	GetConditions() []metav1.Condition
}

// waitForCondition waits until obj's condition has the status and reason.
func waitForCondition(t *testing.T, obj conditionsOf, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var found *metav1.Condition
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		found = meta.FindStatusCondition(obj.GetConditions(), condType)
		if found == nil {
			return false, fmt.Sprintf("no %s condition in %v", condType, obj.GetConditions())
		}
		return found.Status == status && (reason == "" || found.Reason == reason), fmt.Sprintf("%s=%s reason %s: %s", condType, found.Status, found.Reason, found.Message)
	})
	return found
}

// waitForObject waits until obj exists and returns it.
func waitForObject(t *testing.T, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// markAvailable plays the Deployment controller: it reports every replica
// of the current generation updated, ready and available. It waits until
// some field manager has set spec.replicas: every kind sets it, and a
// MicroServiceDeploy that autoscales sets it in a second write after the
// create (the handover), so a Deployment without it is not yet the
// generation the operator will wait on.
func markAvailable(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		if ok, why := getWritten(t, d); !ok {
			return false, why
		}
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		if err := k8s.Status().Update(context.Background(), d); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// getWritten reads d and reports whether the operator is done creating
// it: some field manager holds spec.replicas. If not, it says why not.
func getWritten(t *testing.T, d *appsv1.Deployment) (bool, string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
		return false, err.Error()
	}
	if len(testenv.ReplicasOwners(t, d)) == 0 {
		return false, "no field manager has set spec.replicas yet"
	}
	return true, ""
}

// reconcileCount is how many passes the named controller has finished, in
// this process.
func reconcileCount(t *testing.T, controllerName string) float64 {
	t.Helper()
	n, err := testenv.ReconcileCount(controllerName)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// expectNoMutations waits for trigger to cause at least one more pass of the
// controller, then lets the operator idle, and fails on any mutating request
// the operator made in ns meanwhile.
func expectNoMutations(t *testing.T, op *testenv.Operator, ns, controllerName string, trigger func()) {
	t.Helper()
	// Converged first: events are sent asynchronously, and a pass still
	// queued may have read an object from the cache before the last status
	// write reached it. A controller that never stops writing fails here.
	op.Mutations.WaitQuiet(t, ns, time.Second, settleWithin)
	op.Mutations.Reset()
	before := reconcileCount(t, controllerName)
	trigger()
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		n := reconcileCount(t, controllerName)
		return n > before, fmt.Sprintf("no pass after the trigger (%v passes)", n)
	})
	time.Sleep(time.Second)
	if muts := op.Mutations.In(ns); len(muts) != 0 {
		t.Fatalf("at steady state the operator made %d mutating requests, want 0:\n%s", len(muts), strings.Join(muts, "\n"))
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// plainDeployment returns a Deployment of one container and no pods whose
// pods carry labels, as something other than the operator makes it.
func plainDeployment(ns, name string, labels map[string]string, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}
