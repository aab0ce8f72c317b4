package plugin_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/plugin"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var (
	testCluster *cluster.Cluster
	k8s         client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunAgainstAPIServer(m, func(c *cluster.Cluster, kc client.Client) { testCluster, k8s = c, kc }))
}

// namespace creates a namespace with its default ServiceAccount, which
// pods need (no controller makes it on this API server).
func namespace(t *testing.T) string {
	t.Helper()
	ns := testenv.NewNamespace(t, k8s)
	testenv.Create(t, k8s, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}})
	return ns
}

// mapper resolves kinds as kubectl does, from the API server's discovery.
func mapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
}

// newRedis creates a RedisEnterpriseCluster called name in ns.
func newRedis(t *testing.T, ns, name string) *redisv1alpha1.RedisEnterpriseCluster {
	t.Helper()
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3}}
	if err := k8s.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A resource is named as kubectl names one: by kind, plural or short
// name, as KIND NAME or KIND/NAME; a kind of someone else, or one the
// cluster does not serve, is refused naming the operator's kinds.
func TestResolveNamesAResourceAsKubectlDoes(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	newRedis(t, ns, "cache")
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"}, Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
	if err := k8s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	m := mapper(t)
	for _, c := range []struct {
		args       []string
		kind, name string
	}{
		{[]string{"rec", "cache"}, "RedisEnterpriseCluster", "cache"},
		{[]string{"redisenterprisecluster/cache"}, "RedisEnterpriseCluster", "cache"},
		{[]string{"RedisEnterpriseClusters", "cache"}, "RedisEnterpriseCluster", "cache"},
		{[]string{"etcd", "store"}, "EtcdCluster", "store"},
		{[]string{"etcdclusters.etcd.database.coreos.com/store"}, "EtcdCluster", "store"},
	} {
		target, err := plugin.Resolve(ctx, k8s, m, ns, c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if target.Kind.GVK.Kind != c.kind || target.Obj.GetName() != c.name {
			t.Errorf("%q resolved to %s %s, want %s %s", c.args, target.Kind.GVK.Kind, target.Obj.GetName(), c.kind, c.name)
		}
	}
	for _, args := range [][]string{{"pods", "x"}, {"nosuchkind", "x"}, {"rec"}} {
		if _, err := plugin.Resolve(ctx, k8s, m, ns, args); err == nil {
			t.Errorf("%q resolved, want an error", args)
		} else {
			t.Logf("%q: %v", args, err)
		}
	}
	if _, err := plugin.Resolve(ctx, k8s, m, ns, []string{"pods", "x"}); err == nil || !strings.Contains(err.Error(), "RedisEnterpriseCluster") {
		t.Errorf("a pod named: %v, want an error naming the operator's kinds", err)
	}
}

// status reads the nodes from the status, each with its pod, the
// certificate from the Secret spec.tls names, and the resource's own
// events only.
func TestGatherReadsTheMembersTheirPodsTheCertificateAndTheEvents(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, TLS: &redisv1alpha1.TLS{SecretName: "cache-cert"}}}
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	changed := metav1.NewTime(time.Now().Add(-time.Hour))
	r.Status = redisv1alpha1.RedisEnterpriseClusterStatus{State: redisv1alpha1.StateRunning, Primary: "cache-1", ObservedGeneration: r.Generation,
		Nodes: []redisv1alpha1.NodeStatus{{Name: "cache-0", Role: "replica", Healthy: true}, {Name: "cache-1", Role: "primary", Healthy: true}, {Name: "cache-2", Role: "replica"}},
		PrimaryHistory: []redisv1alpha1.PrimaryChange{{From: "cache-0", To: "cache-1", Reason: "Failover", Time: changed},
			{From: "cache-2", To: "cache-0", Reason: "Switchover", Time: changed}, {From: "cache-1", To: "cache-2", Reason: "Handover", Time: changed},
			{From: "cache-0", To: "cache-1", Reason: "Handover", Time: changed}}}
	if err := k8s.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cache-0", "cache-1"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: resources.Labels(redisenterprisecluster.Selector("cache"))},
			Spec: corev1.PodSpec{NodeName: "node-" + name, Containers: []corev1.Container{{Name: "redis", Image: "redis"}}}}
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "redis", RestartCount: 2}}}
		if err := k8s.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := pki.NewCA("plugin-test-ca", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("cache", []string{"cache"}, time.Now(), 40*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-cert"}, Data: cert.Data()}); err != nil {
		t.Fatal(err)
	}
	for i, uid := range []string{string(r.UID), "someone-else"} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("ev-%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "RedisEnterpriseCluster", Namespace: ns, Name: "cache", UID: types.UID(uid)},
			Reason:         fmt.Sprintf("Reason%d", i), Message: "m", Type: corev1.EventTypeNormal, LastTimestamp: metav1.Now(), Count: 1}
		if err := k8s.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}

	s, err := plugin.Gather(ctx, k8s, "RedisEnterpriseCluster", r)
	if err != nil {
		t.Fatal(err)
	}
	screen := plugin.Render(s, time.Now())
	t.Log("\n" + screen)
	wantRows := [][]string{{"cache-0", "replica", "yes", "Ready", "2", "node-cache-0"}, {"cache-1", "primary", "yes", "Ready", "2", "node-cache-1"}, {"cache-2", "replica", "no", "missing", "-", "-"}}
	if fmt.Sprint(s.Members.Rows) != fmt.Sprint(wantRows) {
		t.Errorf("members %v, want %v", s.Members.Rows, wantRows)
	}
	if len(s.Certificates) != 1 || s.Certificates[0].Secret != "cache-cert" || s.Certificates[0].Problem != "" ||
		s.Certificates[0].NotAfter.Before(time.Now().Add(39*24*time.Hour)) || s.Certificates[0].Subject != "CN=cache" {
		t.Errorf("certificates %+v, want cache-cert's, CN=cache, expiring in 40 days", s.Certificates)
	}
	if len(s.Events) != 1 || s.Events[0].Reason != "Reason0" {
		t.Errorf("events %+v, want the resource's one event", s.Events)
	}
	if len(s.Changes) != 3 || s.Changes[0].To != "cache-1" || s.Changes[0].Reason != "Failover" || s.Changes[2].Reason != "Handover" {
		t.Errorf("primary changes %+v, want the newest three of the history", s.Changes)
	}
	for _, want := range []string{"Primary:     cache-1", "State:       Running", "in 39d"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q", want)
		}
	}
}

// pause and resume write the pause annotation and nothing else.
func TestPauseAndResumeWriteTheAnnotation(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	r := newRedis(t, ns, "cache")
	if err := plugin.Pause(ctx, k8s, r); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if !conditions.IsPaused(r.Annotations) {
		t.Errorf("annotations %v after pause, want %s", r.Annotations, conditions.PausedAnnotation)
	}
	if err := plugin.Resume(ctx, k8s, r); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Annotations[conditions.PausedAnnotation]; ok {
		t.Errorf("annotations %v after resume, want no %s", r.Annotations, conditions.PausedAnnotation)
	}
}

// hibernate and wake set spec.hibernate of a data service, and refuse
// any other kind.
func TestHibernateAndWakeSetTheSpec(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	// A cluster of persistent nodes: hibernation keeps their data.
	r := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"},
		Spec: redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, PersistentSpec: &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: true}}}}
	if err := k8s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := plugin.Hibernate(ctx, k8s, r, true); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if !r.Spec.Hibernate {
		t.Errorf("spec.hibernate false after hibernate")
	}
	if err := plugin.Hibernate(ctx, k8s, r, false); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if r.Spec.Hibernate {
		t.Errorf("spec.hibernate true after wake")
	}
	if err := plugin.Hibernate(ctx, k8s, &corev1.ConfigMap{}, true); err == nil {
		t.Errorf("a ConfigMap hibernated, want an error")
	}
}

// switchover sets the switchover annotation to the target and a new
// request ID each time, on a data service only.
func TestSwitchoverSetsANewRequestEachTime(t *testing.T) {
	ctx, ns := context.Background(), namespace(t)
	r := newRedis(t, ns, "cache")
	first, err := plugin.Switchover(ctx, k8s, r, "cache-2", time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	second, err := plugin.Switchover(ctx, k8s, r, "cache-2", time.Unix(200, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if got := r.Annotations[switchover.Annotation]; got != second || first == second || !strings.HasPrefix(got, "cache-2/") {
		t.Errorf("annotation %q after asking twice (%q, %q), want a new request for cache-2", got, first, second)
	}
	if _, err := plugin.Switchover(ctx, k8s, &corev1.ConfigMap{}, "x", time.Now()); err == nil {
		t.Errorf("a switchover of a ConfigMap asked, want an error")
	}
}

// The report holds the resource, what it owns directly and through its
// StatefulSet (pods, claims), a Secret's keys but never its values, the
// events of them all, and only the operator's log lines about it.
func TestReportHoldsTheResourceWhatItOwnsEventsAndItsLogLines(t *testing.T) {
	ctx, ns, opNS := context.Background(), namespace(t), namespace(t)
	r := newRedis(t, ns, "cache")
	claimSpec := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Spec: appsv1.StatefulSetSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis"}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec}},
	}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache"}, Data: map[string][]byte{"password": []byte("hunter2-secret-value")}}
	for _, o := range []client.Object{sts, secret} {
		if err := controllerutil.SetControllerReference(r, o, k8s.Scheme()); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cache-0"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis"}}}}
	if err := controllerutil.SetControllerReference(sts, pod, k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-cache-0"}, Spec: claimSpec}
	stranger := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-its"}}
	operatorPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "operator", Labels: map[string]string{"app": "op"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "op"}}}}
	for _, o := range []client.Object{pod, claim, stranger, operatorPod} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	logs := func(_ context.Context, namespace, name, container string) (io.ReadCloser, error) {
		if namespace != opNS || name != "operator" || container != "manager" {
			return nil, fmt.Errorf("the log of %s/%s %s asked for", namespace, name, container)
		}
		return io.NopCloser(strings.NewReader(strings.Join([]string{
			fmt.Sprintf(`{"msg":"Reconciling","RedisEnterpriseCluster":{"name":"cache","namespace":%q}}`, ns),
			`{"msg":"Reconciling","RedisEnterpriseCluster":{"name":"cache","namespace":"elsewhere"}}`,
			fmt.Sprintf(`{"msg":"Reconciling","EtcdCluster":{"name":"other","namespace":%q}}`, ns),
		}, "\n"))), nil
	}
	scheme, err := plugin.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	op := plugin.Operator{Namespace: opNS, Selector: map[string]string{"app": "op"}, Container: "manager"}
	if _, err := plugin.Report(ctx, k8s, scheme, logs, op, &plugin.Target{Obj: r}, time.Now(), &archive); err != nil {
		t.Fatal(err)
	}
	files := untar(t, archive.Bytes())
	for _, name := range []string{"resource.yaml", "children/statefulset-cache.yaml", "children/secret-cache.yaml", "children/pod-cache-0.yaml",
		"children/persistentvolumeclaim-data-cache-0.yaml", "events.yaml", "operator.log"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the report lacks %s; it has %v", name, keys(files))
		}
	}
	if _, ok := files["children/configmap-not-its.yaml"]; ok {
		t.Errorf("the report holds a ConfigMap the resource does not own")
	}
	if s := files["children/secret-cache.yaml"]; strings.Contains(s, "hunter2") || strings.Contains(s, "aHVudGVyMi") || !strings.Contains(s, "password") {
		t.Errorf("the Secret in the report:\n%s\nwant its key, never its value", s)
	}
	if log := files["operator.log"]; strings.Count(log, "Reconciling") != 1 || !strings.Contains(log, ns) {
		t.Errorf("operator.log:\n%s\nwant the one line about %s/cache", log, ns)
	}
}

// untar returns the files of a gzipped tar archive.
func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
