package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// etcdChangeCase brings a fixture to the start of its membership changes:
// its spec differs from the members it has.
type etcdChangeCase struct {
	name  string
	start func(t *testing.T) *etcdFixture
}

var etcdChangeCases = []etcdChangeCase{
	{"grown from 3 to 5 members", func(t *testing.T) *etcdFixture { return newEtcdFixture(t, 5) }},
	{"shrunk from 5 to 3 members, the leader among those removed", func(t *testing.T) *etcdFixture {
		f := newEtcdFixture(t, 5)
		r := controller.NewEtcdReconcilerAt(k8s, f.fake.Dial, clock.RealClock{})
		if !etcdConverge(t, f, r, context.Background(), 20) {
			t.Fatalf("the cluster did not grow to 5 members: calls %v", f.fake.Calls)
		}
		// The last member, the first removed, leads.
		members := etcdMembers(f)
		for _, m := range f.fake.Endpoints {
			m.Status.Leader = members[len(members)-1].ID
		}
		get(t, f.obj)
		f.obj.Spec.Size = 3
		if err := k8s.Update(context.Background(), f.obj); err != nil {
			t.Fatal(err)
		}
		f.fake.Calls = nil
		return f
	}},
}

// The operator stops inside a membership change, right before or right
// after each call to etcd takes effect (SIGTERM: the pass cancelled; or
// SIGKILL: nothing it would write lands), and a new operator takes over,
// the member pods coming and going as the StatefulSet says: at no point
// is more than one member joining or a learner, or fewer than a quorum
// of the voting members healthy; and the cluster ends at the spec's size,
// every member started and voting, status.members etcd's list.
func TestEtcdMembershipChangeStoppedAtEachCall(t *testing.T) {
	for _, c := range etcdChangeCases {
		t.Run(c.name, func(t *testing.T) {
			whole := c.start(t)
			r := controller.NewEtcdReconcilerAt(k8s, whole.fake.Dial, clock.RealClock{})
			if !etcdConverge(t, whole, r, context.Background(), 20) {
				t.Fatalf("the change did not finish: calls %v", whole.fake.Calls)
			}
			calls := slices.Clone(whole.fake.Calls)
			if len(calls) < 2 {
				t.Fatalf("the change made %v: too few calls to stop between", calls)
			}
			for i := range calls {
				for _, after := range []bool{false, true} {
					for _, killed := range []bool{false, true} {
						name := fmt.Sprintf("stopped %s call %d of %v, killed %v", map[bool]string{false: "before", true: "after"}[after], i, calls, killed)
						t.Run(name, func(t *testing.T) { etcdChangeStoppedAt(t, c, i, after, killed) })
					}
				}
			}
		})
	}
}

func etcdChangeStoppedAt(t *testing.T, c etcdChangeCase, i int, after, killed bool) {
	f := c.start(t)
	dead := &atomic.Bool{}
	old := controller.NewEtcdReconcilerAt(killable{Client: k8s, dead: dead}, f.fake.Dial, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := &atomic.Bool{}
	// The calls are counted from here: a case's start makes its own.
	sent := 0
	f.fake.Crash = func(int, string) bool { sent++; return sent-1 == i }
	f.fake.CrashAfter = after
	f.fake.OnCrash = func() { stopped.Store(true); dead.Store(killed); cancel() }
	for range 20 {
		if stopped.Load() {
			break
		}
		etcdPass(t, f, old, ctx)
	}
	if !stopped.Load() {
		t.Fatalf("the operator made %v and was not stopped at its call %d", f.fake.Calls, i)
	}
	f.fake.Crash = nil
	// A new operator, which knows only what the status and the members
	// say.
	r := controller.NewEtcdReconcilerAt(k8s, f.fake.Dial, clock.RealClock{})
	if !etcdConverge(t, f, r, context.Background(), 20) {
		t.Errorf("the cluster did not converge: calls %v, members %+v", f.fake.Calls, etcdMembers(f))
	}
	members := etcdMembers(f)
	if len(members) != int(f.obj.Spec.Size) {
		t.Errorf("%d members, want %d (calls %v)", len(members), f.obj.Spec.Size, f.fake.Calls)
	}
	for _, m := range members {
		if m.Name == "" || m.IsLearner || f.fake.Endpoints[etcdMemberURL(f, m)] == nil {
			t.Errorf("member %x (%s): started %v, learner %v, answering %v; want it started, voting and answering",
				m.ID, m.PeerURLs, m.Name != "", m.IsLearner, f.fake.Endpoints[etcdMemberURL(f, m)] != nil)
		}
	}
	if recorded, listed := etcdRecorded(t, f), etcdListed(f); !slices.Equal(recorded, listed) {
		t.Errorf("status.members %v, etcd lists %v", recorded, listed)
	}
}

// etcdListed is the fake cluster's members, as "<name> <id>[ learner]",
// sorted.
func etcdListed(f *etcdFixture) []string {
	members := etcdMembers(f)
	out := make([]string, 0, len(members))
	for _, m := range members {
		out = append(out, m.Name+" "+strconv.FormatUint(m.ID, 16)+map[bool]string{true: " learner"}[m.IsLearner])
	}
	slices.Sort(out)
	return out
}

// etcdRecorded is status.members as etcdListed says them.
func etcdRecorded(t *testing.T, f *etcdFixture) []string {
	t.Helper()
	get(t, f.obj)
	out := make([]string, 0, len(f.obj.Status.Members))
	for _, m := range f.obj.Status.Members {
		out = append(out, m.Name+" "+m.ID+map[bool]string{true: " learner"}[m.Learner])
	}
	slices.Sort(out)
	return out
}

// etcdConverge runs passes of r, the pods following the StatefulSet
// between them (see etcdWorld), until the cluster is at its spec; false
// when it is not after n passes.
func etcdConverge(t *testing.T, f *etcdFixture, r reconcile.Reconciler, ctx context.Context, n int) bool {
	t.Helper()
	for range n {
		etcdPass(t, f, r, ctx)
		members := etcdMembers(f)
		if len(members) == int(f.obj.Spec.Size) && !slices.ContainsFunc(members, func(m etcd.Member) bool { return m.Name == "" || m.IsLearner }) &&
			slices.Equal(etcdRecorded(t, f), etcdListed(f)) {
			return true
		}
	}
	return false
}

// etcdPass runs one pass of r, checks the membership it left (see
// etcdSafe), lets the pods follow the StatefulSet and checks it again.
func etcdPass(t *testing.T, f *etcdFixture, r reconcile.Reconciler, ctx context.Context) {
	t.Helper()
	_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.obj)})
	etcdSafe(t, f)
	etcdWorld(t, f)
	etcdSafe(t, f)
}

// etcdSafe fails the test when more than one member is joining or a
// learner, or when fewer than a quorum of the voting members answer.
func etcdSafe(t *testing.T, f *etcdFixture) {
	t.Helper()
	var inFlight []string
	voters, healthy := 0, 0
	for _, m := range etcdMembers(f) {
		if m.Name == "" || m.IsLearner {
			inFlight = append(inFlight, fmt.Sprintf("%x", m.ID))
		}
		if !m.IsLearner {
			voters++
			if e := f.fake.Endpoints[etcdMemberURL(f, m)]; e != nil && e.Status.Leader != 0 {
				healthy++
			}
		}
	}
	if len(inFlight) > 1 {
		t.Errorf("members %v are all joining or learners: more than one change in flight (calls %v)", inFlight, f.fake.Calls)
	}
	if healthy < etcdcluster.Quorum(voters) {
		t.Errorf("%d of %d voting members healthy: the quorum is lost (calls %v)", healthy, voters, f.fake.Calls)
	}
}

// etcdMembers is the member list of the fake cluster.
func etcdMembers(f *etcdFixture) []etcd.Member {
	for _, e := range f.fake.Endpoints {
		if e != nil {
			return slices.Clone(e.Members)
		}
	}
	return nil
}

// etcdMemberURL is the client URL of member m's pod.
func etcdMemberURL(f *etcdFixture, m etcd.Member) string {
	pod, _ := etcdcluster.MemberOfPeerURL("e", f.obj.Namespace, m.PeerURLs[0])
	i, _ := etcdcluster.Ordinal("e", pod)
	return etcdURL(i)
}

// etcdWorld does what the StatefulSet controller, the kubelet and etcd
// would: the member pods are those of the StatefulSet's replicas, a pod
// whose member etcd lists starts it (it answers and etcd reports its
// name), and a member etcd no longer lists stops.
func etcdWorld(t *testing.T, f *etcdFixture) {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: f.obj.Namespace, Name: "e"}, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return
		}
		t.Fatal(err)
	}
	replicas := int(*sts.Spec.Replicas)
	pods := &corev1.PodList{}
	if err := k8s.List(ctx, pods, client.InNamespace(f.obj.Namespace)); err != nil {
		t.Fatal(err)
	}
	exists := map[int]bool{}
	for _, p := range pods.Items {
		i, _ := etcdcluster.Ordinal("e", p.Name)
		if i >= replicas {
			if err := k8s.Delete(ctx, &p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			continue
		}
		exists[i] = true
	}
	for i := range replicas {
		if !exists[i] {
			name := fmt.Sprintf("e-%d", i)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.obj.Namespace, Name: name, Labels: resources.Labels(etcdcluster.Selector("e"))},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: etcdcluster.ContainerName, Image: f.obj.Spec.Image(f.obj.Spec.Version)}}},
			}
			if err := k8s.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: etcdPodIP(i), PodIPs: []corev1.PodIP{{IP: etcdPodIP(i)}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			if err := k8s.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			exists[i] = true
		}
	}
	members := etcdMembers(f)
	var leader uint64
	for _, e := range f.fake.Endpoints {
		if e != nil {
			leader = e.Status.Leader
		}
	}
	for url, e := range f.fake.Endpoints {
		if !slices.ContainsFunc(members, func(m etcd.Member) bool { return m.ID == e.Status.MemberID }) {
			delete(f.fake.Endpoints, url)
		}
	}
	// A leader removed steps down: a voter that answers is elected.
	if !slices.ContainsFunc(members, func(m etcd.Member) bool { return m.ID == leader }) {
		for _, e := range f.fake.Endpoints {
			if !slices.ContainsFunc(members, func(m etcd.Member) bool { return m.ID == e.Status.MemberID && m.IsLearner }) {
				leader = e.Status.MemberID
			}
		}
		for _, e := range f.fake.Endpoints {
			e.Status.Leader = leader
		}
	}
	for _, m := range members {
		pod, _ := etcdcluster.MemberOfPeerURL("e", f.obj.Namespace, m.PeerURLs[0])
		i, _ := etcdcluster.Ordinal("e", pod)
		url := etcdURL(i)
		if !exists[i] || f.fake.Endpoints[url] != nil {
			continue
		}
		f.fake.Endpoints[url] = &etcd.FakeMember{Status: etcd.Status{ClusterID: 7, MemberID: m.ID, Leader: leader, Version: f.obj.Spec.Version}}
		for _, e := range f.fake.Endpoints {
			if e.Members == nil {
				e.Members = slices.Clone(members)
			}
			for j := range e.Members {
				if e.Members[j].ID == m.ID {
					e.Members[j].Name = pod
				}
			}
		}
	}
}
