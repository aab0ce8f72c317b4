package controller_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/permissions"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// writeCounter is a client that records every write it sends.
type writeCounter struct {
	client.Client
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) record(verb string, obj any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := fmt.Sprintf("%T", obj)
	if o, ok := obj.(client.Object); ok {
		name += " " + o.GetName()
	}
	w.writes = append(w.writes, verb+" "+name)
}

// take returns the writes recorded so far and forgets them.
func (w *writeCounter) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}

func (w *writeCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w.record("create", obj)
	return w.Client.Create(ctx, obj, opts...)
}

func (w *writeCounter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w.record("update", obj)
	return w.Client.Update(ctx, obj, opts...)
}

func (w *writeCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	w.record("patch", obj)
	return w.Client.Patch(ctx, obj, patch, opts...)
}

func (w *writeCounter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	w.record("apply", obj)
	return w.Client.Apply(ctx, obj, opts...)
}

func (w *writeCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w.record("delete", obj)
	return w.Client.Delete(ctx, obj, opts...)
}

func (w *writeCounter) Status() client.SubResourceWriter {
	return &statusCounter{SubResourceWriter: w.Client.Status(), w: w}
}

type statusCounter struct {
	client.SubResourceWriter
	w *writeCounter
}

func (s *statusCounter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.w.record("update status", obj)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *statusCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.w.record("patch status", obj)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// asOperator returns a client that acts as a service account of ns
// holding the operator's ClusterRole (config/rbac), and no more: the API
// server's RBAC, its escalation check included, judges its requests.
func asOperator(t *testing.T, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	rules, err := permissions.Required()
	if err != nil {
		t.Fatal(err)
	}
	name := "app-operator-test-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator", Namespace: ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	cfg := rest.CopyConfig(testCluster.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":operator"}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The console of a cluster: a Deployment of the operator's image whose
// service account may read and patch its own cluster and read its
// Secrets, and nothing else; the `<name>-ui` Service selects it; without
// spec.tls, it serves a certificate the operator issues for the
// Service's names. The operator, with its own ClusterRole only, may grant
// that; a pass with nothing to change writes nothing; spec.console
// turned off deletes it.
func TestRedisConsoleIsMadeWithItsOwnRightsAndRemovedWhenTurnedOff(t *testing.T) {
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{0: primaryOf(100), 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true)})
	ns := f.obj.Namespace
	operator := &writeCounter{Client: asOperator(t, ns)}
	f.r = controller.NewRedisReconciler(operator, f.redis, f.clock, failoverWindow)
	f.mustPass()
	settleStatefulSet(t, f)
	f.mustPass()
	f.mustPass()

	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	role := &rbacv1.Role{}
	if err := k8s.Get(context.Background(), key("r-ui"), role); err != nil {
		t.Fatalf("the console's Role: %v", err)
	}
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"app.redislabs.com"}, Resources: []string{"redisenterpriseclusters"}, ResourceNames: []string{"r"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"r", "r-ui-tls"}, Verbs: []string{"get"}},
	}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" {
		t.Errorf("the console's Role (-want +got):\n%s", diff)
	}
	binding := &rbacv1.RoleBinding{}
	if err := k8s.Get(context.Background(), key("r-ui"), binding); err != nil {
		t.Fatalf("the console's RoleBinding: %v", err)
	}
	if binding.RoleRef.Name != "r-ui" || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "r-ui" || binding.Subjects[0].Namespace != ns {
		t.Errorf("RoleBinding %+v %+v, want r-ui bound to the service account r-ui", binding.RoleRef, binding.Subjects)
	}
	if err := k8s.Get(context.Background(), key("r-ui"), &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the console's ServiceAccount: %v", err)
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), key("r-ui"), d); err != nil {
		t.Fatalf("the console's Deployment: %v", err)
	}
	if !metav1.IsControlledBy(d, f.obj) || d.Spec.Template.Spec.ServiceAccountName != "r-ui" || d.Spec.Template.Spec.Containers[0].Image != "app-operator:test" {
		t.Errorf("Deployment owned by %+v, service account %s, image %s; want the cluster's, r-ui, the operator's image",
			d.OwnerReferences, d.Spec.Template.Spec.ServiceAccountName, d.Spec.Template.Spec.Containers[0].Image)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(context.Background(), key("r-ui"), svc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.Merge(d.Spec.Template.Labels, svc.Spec.Selector), d.Spec.Template.Labels); diff != "" ||
		svc.Spec.Selector[resources.LabelName] != redisenterprisecluster.ConsoleKindName {
		t.Errorf("the ui Service selects %v, want the console's pods %v and no node", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	ports := make([]int32, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Port)
	}
	if !slices.Equal(ports, []int32{8443, 9443}) {
		t.Errorf("the ui Service's ports %v, want 8443 and 9443", ports)
	}
	cert := &corev1.Secret{}
	if err := k8s.Get(context.Background(), key("r-ui-tls"), cert); err != nil {
		t.Fatalf("the console's certificate: %v", err)
	}
	leaf, err := tlssecret.Leaf(cert.Data)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r-ui." + ns + ".svc", "r-ui." + ns, "r-ui"}; !slices.Equal(leaf.DNSNames, want) || leaf.NotAfter.Before(time.Now().Add(30*24*time.Hour)) {
		t.Errorf("the console's certificate names %v until %s, want %v for longer than a month", leaf.DNSNames, leaf.NotAfter, want)
	}

	// At rest: no write at all.
	operator.take()
	f.mustPass()
	if w := operator.take(); len(w) != 0 {
		t.Errorf("a pass with nothing to change wrote %v", w)
	}

	// Turned off: the console's objects go; the Service stays, selecting
	// no pod.
	get(t, f.obj)
	f.obj.Spec.Console = &redisv1alpha1.Console{Enabled: ptr.To(false)}
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	for _, o := range []client.Object{&appsv1.Deployment{}, &rbacv1.RoleBinding{}, &rbacv1.Role{}, &corev1.ServiceAccount{}} {
		err := k8s.Get(context.Background(), key("r-ui"), o)
		if !apierrors.IsNotFound(err) && (err != nil || o.GetDeletionTimestamp().IsZero()) {
			t.Errorf("%T r-ui with the console off: %v, want it deleted", o, err)
		}
	}
	if err := k8s.Get(context.Background(), key("r-ui"), &corev1.Service{}); err != nil {
		t.Errorf("the ui Service with the console off: %v, want it kept", err)
	}
}

// In the manager, with its cache and its index of children by
// controller: the sample gets its console, and loses it when
// spec.console turns it off.
func TestRedisConsoleOfTheSampleGoesWhenTurnedOff(t *testing.T) {
	ns, _ := startOperator(t)
	u := testenv.RedisSampleObject(t, ns)
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	console := func() []client.Object {
		meta := metav1.ObjectMeta{Namespace: ns, Name: redisenterprisecluster.ConsoleName("redis-enterprise")}
		return []client.Object{&appsv1.Deployment{ObjectMeta: meta}, &corev1.ServiceAccount{ObjectMeta: meta},
			&rbacv1.Role{ObjectMeta: meta}, &rbacv1.RoleBinding{ObjectMeta: meta}}
	}
	for _, o := range console() {
		waitForObject(t, o)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, false, "spec", "console", "enabled"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, settleWithin, func() (bool, string) {
		for _, o := range console() {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%T %s still there (%v)", o, o.GetName(), err)
			}
		}
		return true, ""
	})
}
