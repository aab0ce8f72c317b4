package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// storageClass makes a StorageClass of a name of the test's, allowing
// volume expansion or not, deleted when the test ends.
func storageClass(t *testing.T, expandable bool) string {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "grow-"}, Provisioner: "example.com/none",
		AllowVolumeExpansion: ptr.To(expandable)}
	if err := k8s.Create(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), sc) })
	return sc.Name
}

// boundClaims makes the claims of the members of the EtcdCluster e, of
// class, bound with the given size, as the StatefulSet and a provisioner
// would.
func boundClaims(t *testing.T, namespace, cluster, class string, n int, size string) {
	t.Helper()
	for i := range n {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: etcdcluster.ClaimName(fmt.Sprintf("%s-%d", cluster, i)),
				Labels: resources.Labels(etcdcluster.Selector(cluster))},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class, VolumeName: fmt.Sprintf("pv-%s-%d", namespace, i),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
		}
		testenv.Create(t, k8s, pvc)
		setClaimStatus(t, pvc, size)
	}
}

// setClaimStatus plays the volume resizer: claim pvc is bound with
// capacity, and conds.
func setClaimStatus(t *testing.T, pvc *corev1.PersistentVolumeClaim, capacity string, conds ...corev1.PersistentVolumeClaimConditionType) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}}
	for _, c := range conds {
		pvc.Status.Conditions = append(pvc.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: c, Status: corev1.ConditionTrue})
	}
	if err := k8s.Status().Update(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}

// requests are the sizes the claims of the members of cluster e ask for,
// by claim.
func requests(t *testing.T, namespace string, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for i := range n {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: etcdcluster.ClaimName(fmt.Sprintf("e-%d", i))}, pvc); err != nil {
			t.Fatal(err)
		}
		q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		out = append(out, q.String())
	}
	return out
}

// growTo sets spec.storage.size of the fixture's cluster.
func growTo(t *testing.T, f *etcdFixture, size string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(f.obj), f.obj); err != nil {
		t.Fatal(err)
	}
	q := resource.MustParse(size)
	f.obj.Spec.Storage = &etcdv1beta2.Storage{Size: &q}
	if err := k8s.Update(context.Background(), f.obj); err != nil {
		t.Fatal(err)
	}
}

// A larger spec.storage.size grows the members' claims one at a time: the
// next is asked for the size only once the last has it (its capacity, or
// only its file system left to grow); the StatefulSet keeps its claim
// template; the VolumeExpansion condition says so.
func TestEtcdClusterClaimsGrowOneAtATime(t *testing.T) {
	ctx := context.Background()
	f := newEtcdFixture(t, 3)
	ns := f.obj.Namespace
	class := storageClass(t, true)
	boundClaims(t, ns, "e", class, 3, "4Gi")
	f.pass()
	expansion := func() *metav1.Condition {
		t.Helper()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.obj), f.obj); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(f.obj.Status.Conditions, conditions.VolumeExpansion)
	}
	if c := expansion(); c != nil {
		t.Fatalf("VolumeExpansion %+v before any claim had to grow, want none", c)
	}

	growTo(t, f, "8Gi")
	claim := func(i int) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: etcdcluster.ClaimName(fmt.Sprintf("e-%d", i))}}
	}
	steps := []struct {
		name string
		// resize plays the resizer before the pass.
		resize func()
		want   []string
		reason string
	}{
		{"the first claim grows", func() {}, []string{"8Gi", "4Gi", "4Gi"}, conditions.ReasonExpanding},
		{"not the next while the first has not grown", func() {}, []string{"8Gi", "4Gi", "4Gi"}, conditions.ReasonExpanding},
		{"nor while its volume resizes", func() { setClaimStatus(t, claim(0), "4Gi", corev1.PersistentVolumeClaimResizing) }, []string{"8Gi", "4Gi", "4Gi"}, conditions.ReasonExpanding},
		{"the first grown, the second grows", func() { setClaimStatus(t, claim(0), "8Gi") }, []string{"8Gi", "8Gi", "4Gi"}, conditions.ReasonExpanding},
		{"the second's file system left to grow, the third grows", func() {
			setClaimStatus(t, claim(1), "4Gi", corev1.PersistentVolumeClaimFileSystemResizePending)
		}, []string{"8Gi", "8Gi", "8Gi"}, conditions.ReasonExpanding},
		{"all grown", func() { setClaimStatus(t, claim(2), "8Gi") }, []string{"8Gi", "8Gi", "8Gi"}, conditions.ReasonExpanded},
	}
	for _, s := range steps {
		s.resize()
		f.pass()
		if got := requests(t, ns, 3); strings.Join(got, ",") != strings.Join(s.want, ",") {
			t.Fatalf("%s: claims ask for %v, want %v", s.name, got, s.want)
		}
		if c := expansion(); c == nil || c.Reason != s.reason {
			t.Fatalf("%s: VolumeExpansion %+v, want reason %s", s.name, c, s.reason)
		}
	}
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.obj), sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("4Gi")) != 0 {
		t.Errorf("the StatefulSet's claim template asks for %s, want the 4Gi it was made with", got.String())
	}
}

// Claims of a StorageClass that does not allow volume expansion are not
// changed: the VolumeExpansion condition names the class.
func TestEtcdClusterClaimsOfAClassWithoutExpansionDoNotGrow(t *testing.T) {
	ctx := context.Background()
	f := newEtcdFixture(t, 3)
	ns := f.obj.Namespace
	class := storageClass(t, false)
	boundClaims(t, ns, "e", class, 3, "4Gi")
	f.pass()
	growTo(t, f, "8Gi")
	f.pass()
	f.pass()
	if got := requests(t, ns, 3); strings.Join(got, ",") != "4Gi,4Gi,4Gi" {
		t.Errorf("claims ask for %v, want them unchanged", got)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.obj), f.obj); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.VolumeExpansion)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != conditions.ReasonNotExpandable || !strings.Contains(c.Message, "StorageClass "+class) {
		t.Errorf("VolumeExpansion %+v, want False NotExpandable naming StorageClass %s", c, class)
	}
	if r := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v, want True: the members are as they were", r)
	}
}

// A larger spec.persistentSpec.volumeSize grows a Redis cluster's claims
// one at a time, as an EtcdCluster's; the StatefulSet keeps its template.
func TestRedisClusterClaimsGrowOneAtATime(t *testing.T) {
	ctx := context.Background()
	one := resource.MustParse("1Gi")
	primary := &controller.FakeRedisNode{Info: redisnode.Info{Primary: true, Offset: 1000,
		ReplicaLag: map[string]time.Duration{podIP(1): 0, podIP(2): 0}}}
	f := newRedisFixtureOf(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3,
		PersistentSpec: &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: true}, VolumeSize: &one}},
		map[int]*controller.FakeRedisNode{0: primary, 1: replicaOf(r0Host, 1000, true), 2: replicaOf(r0Host, 1000, true)})
	ns := f.obj.Namespace
	class := storageClass(t, true)
	claim := func(i int) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("data-r-%d", i)}}
	}
	for i := range 3 {
		pvc := claim(i)
		pvc.Labels = resources.Labels(redisenterprisecluster.Selector("r"))
		pvc.Spec = corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class, VolumeName: fmt.Sprintf("pv-%s-%d", ns, i),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: one}}}
		testenv.Create(t, k8s, pvc)
		setClaimStatus(t, pvc, "1Gi")
	}
	f.mustPass()
	two := resource.MustParse("2Gi")
	f.obj.Spec.PersistentSpec.VolumeSize = &two
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	sizes := func() string {
		out := make([]string, 0, 3)
		for i := range 3 {
			pvc := claim(i)
			get(t, pvc)
			q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			out = append(out, q.String())
		}
		return strings.Join(out, ",")
	}
	expansion := func() string {
		if c := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.VolumeExpansion); c != nil {
			return c.Reason
		}
		return ""
	}
	for _, s := range []struct {
		name           string
		resize         func()
		want, wantCond string
	}{
		{"the first claim grows", func() {}, "2Gi,1Gi,1Gi", conditions.ReasonExpanding},
		{"not the next while the first has not grown", func() {}, "2Gi,1Gi,1Gi", conditions.ReasonExpanding},
		{"the first grown, the second grows", func() { setClaimStatus(t, claim(0), "2Gi") }, "2Gi,2Gi,1Gi", conditions.ReasonExpanding},
		{"the second grown, the third grows", func() { setClaimStatus(t, claim(1), "2Gi") }, "2Gi,2Gi,2Gi", conditions.ReasonExpanding},
		{"all grown", func() { setClaimStatus(t, claim(2), "2Gi") }, "2Gi,2Gi,2Gi", conditions.ReasonExpanded},
	} {
		s.resize()
		f.mustPass()
		if got := sizes(); got != s.want {
			t.Fatalf("%s: claims ask for %s, want %s", s.name, got, s.want)
		}
		if got := expansion(); got != s.wantCond {
			t.Fatalf("%s: VolumeExpansion reason %q, want %q", s.name, got, s.wantCond)
		}
	}
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(f.obj), sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(one) != 0 {
		t.Errorf("the StatefulSet's claim template asks for %s, want the 1Gi it was made with", got.String())
	}
	if f.obj.Status.Primary != "r-0" {
		t.Errorf("primary %q, want r-0 as it was", f.obj.Status.Primary)
	}
}
