package controller_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/test/testenv"
)

// The seed's sample asks for etcd 3.2.13, which the operator cannot
// manage: it says so (VersionUnsupported, naming spec.version and what to
// set) and creates nothing; set to a version it manages, the cluster
// starts.
func TestEtcdClusterBelowTheMinimumVersionIsRefusedBeforeAnythingIsCreated(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	if e.Spec.Version != "3.2.13" {
		t.Fatalf("the sample asks for %s, want 3.2.13", e.Spec.Version)
	}
	testenv.Create(t, k8s, e)
	fake := &etcd.Fake{}
	r := controller.NewObservedEtcdReconciler(k8s, fake.Dial, nil, events.NewFakeRecorder(100))
	pass := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e)}); err != nil {
			t.Fatal(err)
		}
		get(t, e)
	}
	pass()
	pass()
	c := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonVersionUnsupported ||
		!strings.Contains(c.Message, "spec.version 3.2.13") || !strings.Contains(c.Message, "3.4.0 or later") {
		t.Fatalf("Ready %+v, want False %s naming spec.version 3.2.13 and 3.4.0 or later", c, etcdv1beta2.ReasonVersionUnsupported)
	}
	for _, child := range []client.Object{&appsv1.StatefulSet{}, &corev1.ConfigMap{}, &corev1.Service{}} {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.Name}, child)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s: %v, want none created", child, e.Name, err)
		}
	}
	if len(fake.Calls) != 0 {
		t.Errorf("etcd calls %v, want none", fake.Calls)
	}

	e.Spec.Version = "3.6.16"
	if err := k8s.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	pass()
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.Name}, &appsv1.StatefulSet{}); err != nil {
		t.Errorf("the StatefulSet at 3.6.16: %v, want it created", err)
	}
	if c := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready); c != nil && c.Reason == etcdv1beta2.ReasonVersionUnsupported {
		t.Errorf("Ready %+v at 3.6.16, want the refusal gone", c)
	}
}
