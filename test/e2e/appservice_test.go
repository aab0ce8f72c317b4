package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// The seed samples, applied unchanged, become Ready with two Running pods;
// deleting one removes its children through the garbage collector. Both
// samples ask for node port 30002, so they run one after the other.
func TestSeedSamplesBecomeReadyAndAreCollected(t *testing.T) {
	for _, tc := range []struct {
		file string
		obj  conditioned
	}{
		{"app_v1_appservice.yaml", &appv1.AppService{}},
		{"app_v1_webservice.yaml", &appv1.WebService{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := operatorClient(t)
			ns := newNamespace(t, clientset(t), nil)
			testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
			obj := tc.obj
			testenv.LoadSample(t, tc.file, obj, ns)
			if err := c.Create(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
			waitReady(t, c, obj, 2*time.Minute)

			pods := &corev1.PodList{}
			if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels{"app": "nginx-app"}); err != nil {
				t.Fatal(err)
			}
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == cluster.FakeNodeName {
					running++
				}
			}
			if running != 2 {
				t.Fatalf("%d Running pods, want 2: %v", running, testenv.PodSummary(&corev1.PodList{Items: pods.Items}))
			}

			if err := c.Delete(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
			for _, child := range []client.Object{
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx-app"}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nginx-app"}},
			} {
				testenv.Eventually(t, time.Minute, func() (bool, string) {
					err := c.Get(context.Background(), client.ObjectKeyFromObject(child), child)
					return apierrors.IsNotFound(err), fmt.Sprintf("%T still there: %v", child, err)
				})
			}
		})
	}
}

type conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// waitReady waits for Ready=True for the object's current generation.
func waitReady(t *testing.T, c client.Client, obj conditioned, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		ready := meta.FindStatusCondition(obj.GetConditions(), conditions.Ready)
		if ready == nil {
			return false, "no Ready condition"
		}
		return ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == obj.GetGeneration(),
			fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
	})
	testenv.CheckStatusInvariants(t, obj)
}

func operatorClient(t *testing.T) client.Client { return testenv.Client(t, testCluster.Config()) }

func clientset(t *testing.T) *kubernetes.Clientset { return testenv.Clientset(t, testCluster.Config()) }
