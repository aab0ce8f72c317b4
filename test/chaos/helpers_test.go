package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	operatorv1 "github.com/app-operator/app-operator/api/operator/v1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/kinds"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

var scheme = controller.NewScheme()

func newClient(t testing.TB) client.Client {
	t.Helper()
	c, err := client.New(testCluster.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// namespace creates a namespace for one scenario and deletes it afterwards.
func namespace(t testing.TB, c client.Client) string {
	t.Helper()
	return testenv.NewNamespace(t, c)
}

// managed is a scenario's namespace and the manager process that watches
// it, through the proxy "operator".
type managed struct {
	c  client.Client
	ns string
	p  *proxy
	// logs is the folder of the manager's log, which restarts append to.
	logs string
	op   *testenv.ManagerProcess
}

// startManaged creates a namespace for a scenario and starts a manager
// process for it.
func startManaged(t *testing.T) *managed {
	t.Helper()
	m := &managed{c: newClient(t)}
	m.ns = namespace(t, m.c)
	m.p = newProxy(t, "operator")
	m.logs = t.TempDir()
	m.op = startManager(t, m.p, m.logs, managerArgs(m.ns)...)
	return m
}

// restart starts the manager process again, as startManaged did.
func (m *managed) restart(t *testing.T) {
	t.Helper()
	m.op = startManager(t, m.p, m.logs, managerArgs(m.ns)...)
}

// convergeSamples creates the samples in ns and waits until they have
// converged (recorded for the family fam).
func convergeSamples(t *testing.T, c client.Client, ns, fam string) []client.Object {
	t.Helper()
	crs := samples(t, ns)
	create(t, c, crs...)
	waitConverged(t, c, ns, fam, 3*time.Minute)
	return crs
}

// readyInProcess creates a namespace for a scenario, runs the operator for
// it in the test process, creates the samples in it and waits until they
// are Ready.
func readyInProcess(t *testing.T) (client.Client, string, *testenv.Operator, []client.Object) {
	t.Helper()
	c := newClient(t)
	ns := namespace(t, c)
	op := testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}})
	crs := samples(t, ns)
	create(t, c, crs...)
	waitAllReady(t, c, ns, 3*time.Minute)
	return c, ns, op, crs
}

// loops runs functions over and over, each in a goroutine of its own, until
// it is stopped.
type loops struct {
	stopped chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newLoops() *loops { return &loops{stopped: make(chan struct{})} }

// every calls do(0), do(1) and so on, pause after the previous call, until
// the loops stop.
func (l *loops) every(pause time.Duration, do func(i int)) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stopped:
				return
			case <-time.After(pause):
			}
			do(i)
		}
	}()
}

// stop ends every loop and waits until each has returned. Stopping again
// does nothing more.
func (l *loops) stop() {
	l.once.Do(func() { close(l.stopped) })
	l.wg.Wait()
}

var lastNodePort atomic.Int32

// nextNodePort hands out a node port no other scenario uses, from the
// bottom of the default range (30000-32767): the API server assigns the
// ports nobody chose from the top first, and the bottom 86 last, so a
// chosen one there does not meet a Service that got it by chance.
func nextNodePort() int32 {
	n := lastNodePort.Add(1)
	if n > 85 {
		panic("more than 85 chosen node ports: they would meet assigned ones")
	}
	return 30000 + n
}

// samples reads every sample of config/samples into namespace ns: node
// ports are cluster-wide and the scenarios run side by side, so each gets
// its own (or none, where the kind lets the cluster choose); the
// WebService is renamed so that it does not want the AppService's
// children.
func samples(t testing.TB, ns string) []client.Object {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	want := 0
	for _, k := range kinds.All() {
		// A stateful kind is Ready only once its application really runs
		// and answers: test/realpods covers its sample.
		if k.Stateful {
			continue
		}
		want++
		f := filepath.Join(root, "config", "samples", k.Sample)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("decode %s: %v", f, err)
		}
		if ports, found, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); found {
			for _, p := range ports {
				delete(p.(map[string]any), "nodePort")
			}
			_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
		}
		// JSON numbers decode as float64: look the field up, not its type.
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "nodePortNumber"); found {
			_ = unstructured.SetNestedField(u.Object, int64(nextNodePort()), "spec", "nodePortNumber")
		}
		if u.GetKind() == "WebService" {
			u.SetName(u.GetName() + "-web")
		}
		u.SetNamespace(ns)
		objs = append(objs, typed(t, u))
	}
	if len(objs) != want {
		t.Fatalf("want the %d samples of the kinds that run on fake nodes, found %d", want, len(objs))
	}
	return objs
}

// typed converts u to its Go type.
func typed(t testing.TB, u *unstructured.Unstructured) client.Object {
	t.Helper()
	ro, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ro); err != nil {
		t.Fatal(err)
	}
	obj := ro.(client.Object)
	obj.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
	return obj
}

func create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s %s: %v", kindOf(o), o.GetName(), err)
		}
	}
}

func kindOf(o client.Object) string {
	gvk, err := (&unstructured.Unstructured{}).GroupVersionKind(), error(nil)
	if gvks, _, e := scheme.ObjectKinds(o); e == nil && len(gvks) > 0 {
		gvk = gvks[0]
	} else {
		err = e
	}
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return gvk.Kind
}

// customResources lists every resource of the operator's kinds in ns.
func customResources(ctx context.Context, c client.Reader, ns string) ([]client.Object, error) {
	var out []client.Object
	for _, k := range kinds.All() {
		l := k.NewList()
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			o := it.(client.Object)
			gvks, _, _ := scheme.ObjectKinds(o)
			o.GetObjectKind().SetGroupVersionKind(gvks[0])
			out = append(out, o)
		}
	}
	return out, nil
}

// ready reports whether obj is Ready=True for its current generation.
func ready(obj client.Object) (bool, string) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false, err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == "Ready" {
			og, _ := m["observedGeneration"].(int64)
			return m["status"] == "True" && og == obj.GetGeneration(),
				fmt.Sprintf("%s %s: Ready=%v %v (generation %d of %d): %v", kindOf(obj), obj.GetName(), m["status"], m["reason"], og, obj.GetGeneration(), m["message"])
		}
	}
	return false, fmt.Sprintf("%s %s has no Ready condition", kindOf(obj), obj.GetName())
}

// condition returns the Ready condition of obj's status.
func readyCondition(obj client.Object) map[string]any {
	u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	conds, _, _ := unstructured.NestedSlice(u, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

// waitAllReady waits until every resource in ns is Ready for its
// generation, then checks the status invariants of each.
func waitAllReady(t testing.TB, c client.Client, ns string, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, timeout, func() (bool, string) {
		objs, err := customResources(ctx, c, ns)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		var why string
		for _, o := range objs {
			if ok, w := ready(o); ok {
				n++
			} else if why == "" {
				why = w
			}
		}
		return n == len(objs), fmt.Sprintf("%d of %d Ready; %s", n, len(objs), why)
	})
	checkInvariants(t, c, ns)
}

// checkInvariants checks the status invariants of every resource in ns
// that the operator has written a status for. Right after a kill, some
// resources may not have been reached by any pass yet: they have no
// status at all, which says nothing wrong.
func checkInvariants(t testing.TB, c client.Client, ns string) {
	t.Helper()
	objs, err := customResources(context.Background(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if len(o.(interface{ GetConditions() []metav1.Condition }).GetConditions()) == 0 {
			continue
		}
		testenv.CheckStatusInvariants(t, o)
	}
}

// childTypes are the list types of every type of child the controllers
// own.
var childTypes = func() []client.ObjectList {
	owned, err := controller.OwnedTypes()
	if err != nil {
		panic(err)
	}
	out := make([]client.ObjectList, 0, len(owned))
	for _, o := range owned {
		gvks, _, err := scheme.ObjectKinds(o)
		if err != nil {
			panic(err)
		}
		l, err := scheme.New(gvks[0].GroupVersion().WithKind(gvks[0].Kind + "List"))
		if err != nil {
			panic(err)
		}
		out = append(out, l.(client.ObjectList))
	}
	return out
}()

// listAll lists the objects of every list type of lists in ns, type by type.
func listAll(t testing.TB, c client.Client, ns string, lists []client.ObjectList) []client.Object {
	t.Helper()
	var out []client.Object
	for _, l := range lists {
		list := l.DeepCopyObject().(client.ObjectList)
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			out = append(out, it.(client.Object))
		}
	}
	return out
}

// child is one child the builders want: its kind, name and fields.
type child struct {
	owner  client.Object
	kind   string
	name   string
	fields map[string]any
}

func (ch child) String() string {
	return fmt.Sprintf("%s %s of %s %s", ch.kind, ch.name, kindOf(ch.owner), ch.owner.GetName())
}

// desired returns the children the operator's builders want for obj, as
// the manager runs them (no base domain, so no Ingress).
func desired(t testing.TB, obj client.Object) []child {
	t.Helper()
	acs, err := controller.Build(obj, controller.Options{})
	if err != nil {
		t.Fatalf("build the children of %s %s: %v", kindOf(obj), obj.GetName(), err)
	}
	out := make([]child, 0, len(acs))
	for _, ac := range acs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac)
		if err != nil {
			t.Fatal(err)
		}
		uu := unstructured.Unstructured{Object: u}
		out = append(out, child{owner: obj, kind: uu.GetKind(), name: uu.GetName(), fields: u})
	}
	return out
}

// audit is what a comparison of the children in a namespace with what the
// builders want for its resources found.
type audit struct {
	// lost: wanted, but absent or not controlled by its resource.
	lost []string
	// duplicated: controlled by a resource that does not want it (a second
	// copy under another name).
	duplicated []string
	// orphaned: carries the operator's labels, but no live resource
	// controls it.
	orphaned []string
}

func (a audit) clean() bool { return len(a.lost)+len(a.duplicated)+len(a.orphaned) == 0 }

func (a audit) String() string {
	return fmt.Sprintf("lost %v, duplicated %v, orphaned %v", a.lost, a.duplicated, a.orphaned)
}

// auditNamespace compares the children in ns with what the builders want
// for the resources in ns.
func auditNamespace(t testing.TB, c client.Client, ns string) audit {
	t.Helper()
	ctx := context.Background()
	crs, err := customResources(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{} // uid/kind/name
	byUID := map[types.UID]client.Object{}
	for _, cr := range crs {
		if !cr.GetDeletionTimestamp().IsZero() {
			continue
		}
		byUID[cr.GetUID()] = cr
		for _, ch := range desired(t, cr) {
			want[string(cr.GetUID())+"/"+ch.kind+"/"+ch.name] = true
		}
	}
	var a audit
	found := map[string]bool{}
	for _, o := range listAll(t, c, ns, childTypes) {
		kind := reflect.TypeOf(o).Elem().Name()
		id := kind + " " + o.GetName()
		ref := metav1.GetControllerOf(o)
		if ref == nil || byUID[ref.UID] == nil {
			if o.GetLabels()[resources.LabelManagedBy] == resources.ManagedBy || ref != nil {
				a.orphaned = append(a.orphaned, id)
			}
			continue
		}
		key := string(ref.UID) + "/" + kind + "/" + o.GetName()
		if !want[key] {
			a.duplicated = append(a.duplicated, id+" (controlled by "+ref.Kind+" "+ref.Name+")")
			continue
		}
		found[key] = true
	}
	for k := range want {
		if !found[k] {
			a.lost = append(a.lost, k)
		}
	}
	sort.Strings(a.lost)
	return a
}

// waitClean waits until the children of ns are exactly what the builders
// want, records what the last audit found for the family, and fails the
// test if it is not clean.
func waitClean(t *testing.T, c client.Client, ns, fam string, timeout time.Duration) {
	t.Helper()
	var last audit
	deadline := time.Now().Add(timeout)
	for {
		last = auditNamespace(t, c, ns)
		if last.clean() || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	record(fam, last)
	if !last.clean() {
		t.Fatalf("children of %s after %s: %s", ns, timeout, last)
	}
}

// liveChild reads the child ch, or returns nil if it does not exist.
func liveChild(ctx context.Context, c client.Client, ns string, ch child) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ch.fields["apiVersion"].(string))
	u.SetKind(ch.kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ch.name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// restored reports whether the child ch is as the operator wants it:
// controlled by its resource, and holding every field the builder sets
// with the builder's value.
func restored(ctx context.Context, c client.Client, ns string, ch child) (bool, string) {
	u, err := liveChild(ctx, c, ns, ch)
	if err != nil {
		return false, err.Error()
	}
	if u == nil {
		return false, ch.String() + " is missing"
	}
	if !metav1.IsControlledBy(u, ch.owner) {
		return false, ch.String() + " is not controlled by its resource"
	}
	if path, ok := subset(withoutStatus(ch.fields), u.Object, ""); !ok {
		return false, fmt.Sprintf("%s differs at %s", ch, path)
	}
	return true, ""
}

func withoutStatus(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

// subset reports whether want is contained in have: maps key by key, lists
// element by element (the server adds defaults inside elements but keeps
// their order), scalars by their JSON value.
func subset(want, have any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := subset(v, h[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], h[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		if fmt.Sprint(want) != fmt.Sprint(have) {
			return fmt.Sprintf("%s (want %v, have %v)", path, want, have), false
		}
		return "", true
	}
}

// writeKubeconfig writes a kubeconfig for server with no credential (a
// local proxy adds it) and returns its path.
func writeKubeconfig(t testing.TB, server string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "proxy"}
	kc.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// manyResources returns n resources for namespace ns, of the sample kinds
// in turn (AppService, WebService, Memcached, MyWeb), one replica each and
// each under its own name.
func manyResources(t testing.TB, ns string, n int) []client.Object {
	t.Helper()
	one := int32(1)
	var out []client.Object
	for i := 0; len(out) < n; i++ {
		for _, o := range samples(t, ns) {
			if len(out) == n {
				break
			}
			switch r := o.(type) {
			case *appv1.AppService:
				r.Spec.Size = &one
			case *appv1.WebService:
				r.Spec.Size = &one
			case *cachev1alpha1.Memcached:
				r.Spec.Size = 1
			case *operatorv1.MyWeb:
			default:
				continue // MicroServiceDeploy: its pods ask for 2 CPUs each
			}
			o.SetName(fmt.Sprintf("%s-%d", o.GetName(), i))
			out = append(out, o)
		}
	}
	return out
}

// childUIDs returns the UID of every child of the operator in ns, by kind
// and name.
func childUIDs(t testing.TB, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, o := range listAll(t, c, ns, childTypes) {
		if metav1.GetControllerOf(o) == nil && o.GetLabels()[resources.LabelManagedBy] != resources.ManagedBy {
			continue
		}
		out[reflect.TypeOf(o).Elem().Name()+" "+o.GetName()] = o.GetUID()
	}
	return out
}

// missingOrReplaced returns the children of before that are gone from, or
// were replaced (another UID) in, after.
func missingOrReplaced(before, after map[string]types.UID) []string {
	var out []string
	for k, uid := range before {
		switch now, ok := after[k]; {
		case !ok:
			out = append(out, k+" deleted")
		case now != uid:
			out = append(out, k+" replaced")
		}
	}
	sort.Strings(out)
	return out
}

// waitConverged waits until every resource in ns is Ready, the children are
// exactly those the builders want (recorded for the family), and each
// holds every field the builder sets; the status invariants are checked
// along the way. It returns how long that took.
func waitConverged(t *testing.T, c client.Client, ns, fam string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	waitAllReady(t, c, ns, timeout)
	waitClean(t, c, ns, fam, timeout)
	ctx := context.Background()
	crs, err := customResources(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() (bool, string) {
		for _, cr := range crs {
			for _, ch := range desired(t, cr) {
				if ok, why := restored(ctx, c, ns, ch); !ok {
					return false, why
				}
			}
		}
		return true, ""
	})
	checkInvariants(t, c, ns)
	return time.Since(start)
}

// timeUntil polls cond every 20 ms (finer than Eventually, for the figures)
// and returns how long after start it first held; it fails the test after
// timeout.
func timeUntil(t testing.TB, start time.Time, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	for {
		ok, why := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("condition not met within %s: %s", timeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
