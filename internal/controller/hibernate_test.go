package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/redisbackup"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// condition returns the status and reason of the condition typ.
func condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + " " + c.Reason
}

// claimsOf makes a claim for each of names, labelled as the StatefulSet's
// would be, and returns a check that every one is still there.
func claimsOf(t *testing.T, namespace string, selector map[string]string, names ...string) func() {
	t.Helper()
	for _, name := range names {
		testenv.Create(t, k8s, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: resources.Labels(selector)},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		})
	}
	return func() {
		t.Helper()
		for _, name := range names {
			c := &corev1.PersistentVolumeClaim{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, c); err != nil || !c.DeletionTimestamp.IsZero() {
				t.Errorf("claim %s: %v (deleting: %v); want it kept", name, err, !c.DeletionTimestamp.IsZero())
			}
		}
	}
}

func statefulSetOf(t *testing.T, namespace, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

// An EtcdCluster hibernated: its StatefulSet goes to 0 replicas and keeps
// its claims when scaled, the status says Hibernating while pods stop,
// then Ready=True Hibernated; no member is added, removed or promoted,
// status.members keeps every member. Woken, the StatefulSet is back at
// the members' size, its claims deleted with a member removed again, and
// the cluster is Ready with the same members, again without a membership
// change.
func TestEtcdHibernateKeepsTheMembersAndWakes(t *testing.T) {
	ctx := context.Background()
	f := newEtcdFixture(t, 3)
	r := controller.NewEtcdReconcilerAt(k8s, f.fake.Dial, clock.RealClock{})
	if !etcdConverge(t, f, r, ctx, 10) {
		t.Fatalf("the cluster did not converge: calls %v", f.fake.Calls)
	}
	pass := func() {
		t.Helper()
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
		etcdWorld(t, f)
		get(t, f.obj)
	}
	pass()
	kept := claimsOf(t, f.obj.Namespace, etcdcluster.Selector("e"), "data-e-0", "data-e-1", "data-e-2")
	ids := func() []string {
		out := make([]string, 0, len(f.obj.Status.Members))
		for _, m := range f.obj.Status.Members {
			out = append(out, m.Name+"="+m.ID)
		}
		return out
	}
	before := ids()
	if len(before) != 3 {
		t.Fatalf("status.members %v before the hibernation, want 3", before)
	}
	f.fake.Calls = nil

	f.obj.Spec.Hibernate = true
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	get(t, f.obj)
	sts := statefulSetOf(t, f.obj.Namespace, "e")
	if *sts.Spec.Replicas != 0 || sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Fatalf("StatefulSet replicas %d, whenScaled %s; want 0 and Retain", *sts.Spec.Replicas, sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Ready); got != "False "+conditions.ReasonHibernating {
		t.Errorf("Ready %q while the pods stop, want False Hibernating", got)
	}
	for range 3 {
		pass()
	}
	if got := condition(f.obj.Status.Conditions, conditions.Ready); got != "True "+conditions.ReasonHibernated {
		t.Errorf("Ready %q once no pod runs, want True Hibernated", got)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Progressing); got != "False "+conditions.ReasonHibernated {
		t.Errorf("Progressing %q once no pod runs, want False Hibernated", got)
	}
	if got := ids(); !slices.Equal(got, before) {
		t.Errorf("status.members %v while hibernated, want %v kept", got, before)
	}
	if f.obj.Status.Leader != "" || f.obj.Status.ObservedGeneration != f.obj.Generation {
		t.Errorf("leader %q, observedGeneration %d of %d; want none and the current", f.obj.Status.Leader, f.obj.Status.ObservedGeneration, f.obj.Generation)
	}
	if len(f.fake.Calls) > 0 {
		t.Errorf("membership changes while hibernating: %v; want none", f.fake.Calls)
	}
	kept()

	f.obj.Spec.Hibernate = false
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		pass()
		if condition(f.obj.Status.Conditions, conditions.Ready) == "True "+conditions.ReasonAvailable {
			break
		}
	}
	sts = statefulSetOf(t, f.obj.Namespace, "e")
	if *sts.Spec.Replicas != 3 || sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		t.Errorf("StatefulSet replicas %d, whenScaled %s after the wake; want 3 and Delete", *sts.Spec.Replicas, sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Ready); got != "True "+conditions.ReasonAvailable {
		t.Errorf("Ready %q after the wake, want True Available", got)
	}
	if got := ids(); !slices.Equal(got, before) {
		t.Errorf("status.members %v after the wake, want %v", got, before)
	}
	if len(f.fake.Calls) > 0 {
		t.Errorf("membership changes through the hibernation and the wake: %v; want none", f.fake.Calls)
	}
	kept()
}

// bootedNode is a Redis node that just started: a replica of host (the
// recorded primary's role file names no one) that has replicated nothing.
func bootedNode(host string) *controller.FakeRedisNode {
	return &controller.FakeRedisNode{Info: redisnode.Info{PrimaryHost: host, LastIO: -1}}
}

// redisPodWithLineage makes the pod of node i of "r", ready, whose
// lineage container reported offset of history "h1" on its data folder.
func redisPodWithLineage(t *testing.T, namespace string, i int, offset int64) {
	t.Helper()
	ctx := context.Background()
	labels := redisenterprisecluster.Selector("r")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: redisenterprisecluster.PodName("r", i), Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeOf(namespace, i), Containers: []corev1.Container{{Name: "redis", Image: "redis"}}},
	}
	testenv.Create(t, k8s, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podIP(i), PodIPs: []corev1.PodIP{{IP: podIP(i)}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: redisbackup.LineageContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{Message: fmt.Sprintf(`{"known":true,"replicationID":"h1","offset":%d}`, offset)}}}}}
	if err := k8s.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// A RedisEnterpriseCluster with persistence hibernated: its StatefulSet
// goes to 0 replicas, keeping its claims; while its pods stop and once
// they are gone, however long past the failover window, nothing is
// promoted, fenced or repointed and status.primary stays; the status says
// Hibernating, then Ready=True Hibernated with the state Hibernated.
// Woken, the StatefulSet is back at 3, and once the nodes restart (each a
// replica, with what its data folder held), the node holding the most is
// elected by the lineage rules: here r-1, ahead of the recorded r-0.
func TestRedisHibernateHoldsEveryStepAndWakesOnTheNodeFurthestAlong(t *testing.T) {
	ctx := context.Background()
	f := newRedisFixtureOf(t, redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3,
		PersistentSpec: &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: true}}}, map[int]*controller.FakeRedisNode{
		0: {Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true),
	})
	kept := claimsOf(t, f.obj.Namespace, redisenterprisecluster.Selector("r"), "data-r-0", "data-r-1", "data-r-2")
	get(t, f.obj)
	f.obj.Spec.Hibernate = true
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	f.redis.Calls = nil
	f.mustPass()
	sts := statefulSetOf(t, f.obj.Namespace, "r")
	if *sts.Spec.Replicas != 0 || sts.Spec.PersistentVolumeClaimRetentionPolicy == nil ||
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Fatalf("StatefulSet replicas %d, retention %+v; want 0 and Retain", *sts.Spec.Replicas, sts.Spec.PersistentVolumeClaimRetentionPolicy)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Ready); got != "False "+conditions.ReasonHibernating {
		t.Errorf("Ready %q while the pods stop, want False Hibernating", got)
	}
	// The pods stop as the StatefulSet controller would have them, the
	// primary first: no failover, however long.
	for i := range 3 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: redisenterprisecluster.PodName("r", i)}}
		if err := k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		delete(f.redis.Nodes, nodeAddr(i))
		f.mustPass()
		f.clock.Step(2 * failoverWindow)
	}
	f.mustPass()
	if len(f.redis.Calls) > 0 {
		t.Errorf("calls to Redis while hibernating: %v; want none", f.redis.Calls)
	}
	if f.obj.Status.Primary != "r-0" || f.obj.Status.State != redisv1alpha1.StateHibernated {
		t.Errorf("primary %q, state %s; want r-0 kept and Hibernated", f.obj.Status.Primary, f.obj.Status.State)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Ready); got != "True "+conditions.ReasonHibernated {
		t.Errorf("Ready %q once no pod runs, want True Hibernated", got)
	}
	if got := condition(f.obj.Status.Conditions, conditions.Progressing); got != "False "+conditions.ReasonHibernated {
		t.Errorf("Progressing %q once no pod runs, want False Hibernated", got)
	}
	kept()

	get(t, f.obj)
	f.obj.Spec.Hibernate = false
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	f.mustPass()
	if sts := statefulSetOf(t, f.obj.Namespace, "r"); *sts.Spec.Replicas != 3 {
		t.Fatalf("StatefulSet replicas %d after the wake, want 3", *sts.Spec.Replicas)
	}
	// Every node restarts a replica, of no one (r-0, the recorded
	// primary) or of r-0; r-1's data folder holds the most.
	for i, offset := range []int64{100, 120, 90} {
		host := r0Host
		if i == 0 {
			host = "127.0.0.1"
		}
		f.redis.Nodes[nodeAddr(i)] = bootedNode(host)
		redisPodWithLineage(t, f.obj.Namespace, i, offset)
	}
	for range 4 {
		f.mustPass()
	}
	if f.obj.Status.Primary != "r-1" {
		t.Errorf("primary %q after the wake, want r-1 (its data folder holds the most); calls %v", f.obj.Status.Primary, f.redis.Calls)
	}
	if promotions := f.redis.CallsMatching("promote"); !slices.Equal(promotions, []string{"promote " + nodeAddr(1)}) {
		t.Errorf("promotions %v after the wake, want r-1's alone", promotions)
	}
	kept()
}

// spec.hibernate without persistence is refused: the API refuses it
// without spec.persistentSpec, and the operator with persistentSpec but
// enabled not true (InvalidSpec, naming the field), scaling nothing down.
func TestRedisHibernateWithoutPersistenceIsRefused(t *testing.T) {
	ctx := context.Background()
	f := newRedisFixture(t, map[int]*controller.FakeRedisNode{
		0: {Info: redisnode.Info{Primary: true, Offset: 100}}, 1: replicaOf(r0Host, 100, true), 2: replicaOf(r0Host, 100, true),
	})
	get(t, f.obj)
	f.obj.Spec.Hibernate = true
	testenv.ExpectAdmission(t, k8s.Update(ctx, f.obj, client.DryRunAll), "spec.hibernate needs spec.persistentSpec.enabled")
	get(t, f.obj)
	f.obj.Spec.PersistentSpec = &redisv1alpha1.PersistentSpec{Enabled: &redisv1alpha1.Flag{Value: false, AsString: true}}
	f.obj.Spec.Hibernate = true
	if err := k8s.Update(ctx, f.obj); err != nil {
		t.Fatal(err)
	}
	_ = f.pass()
	ready := meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready)
	if ready == nil || ready.Reason != conditions.ReasonInvalidSpec || !strings.Contains(ready.Message, "spec.persistentSpec.enabled") {
		t.Errorf("Ready %+v, want InvalidSpec naming spec.persistentSpec.enabled", ready)
	}
	if sts := statefulSetOf(t, f.obj.Namespace, "r"); *sts.Spec.Replicas != 3 {
		t.Errorf("StatefulSet replicas %d after a refused hibernation, want 3", *sts.Spec.Replicas)
	}
}

// An EtcdBackup of a hibernated EtcdCluster takes no snapshot: it waits
// for the cluster to wake, and says so.
func TestEtcdBackupWaitsForAHibernatedCluster(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, k8s)
	testenv.StartOperator(t, testCluster.Config(), testenv.StartOptions{Namespaces: []string{ns}, Options: controller.Options{SnapshotImage: snapshotImage}})
	e := &etcdv1beta2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sleepy"},
		Spec: etcdv1beta2.EtcdClusterSpec{Size: 3, Version: "3.6.16", Hibernate: true}}
	testenv.Create(t, k8s, e)
	waitForCondition(t, e, conditions.Ready, metav1.ConditionTrue, conditions.ReasonHibernated)
	b := &etcdv1beta2.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: etcdv1beta2.EtcdBackupSpec{ClusterName: "sleepy", StorageType: etcdv1beta2.BackupStorageTypePersistentVolumeClaim,
			BackupPolicy:   &etcdv1beta2.BackupPolicy{BackupIntervalInSecond: 60},
			BackupLocation: etcdv1beta2.BackupLocation{PersistentVolumeClaim: &etcdv1beta2.PVCBackupSource{ClaimName: "backups", Path: "etcd"}}},
	}
	testenv.Create(t, k8s, b)
	c := waitForCondition(t, b, conditions.Progressing, metav1.ConditionTrue, etcdv1beta2.ReasonWaitingForCluster)
	if !strings.Contains(c.Message, "hibernated") {
		t.Errorf("Progressing: %q, want it to say the cluster is hibernated", c.Message)
	}
	jobs := &batchv1.JobList{}
	if err := k8s.List(ctx, jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) > 0 {
		t.Errorf("%d backup Jobs of a hibernated cluster, want none", len(jobs.Items))
	}
}
