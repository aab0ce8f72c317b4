package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

const mib = int64(1) << 20

// fillEtcd makes each member of f's cluster hold size MiB, of which
// inUse MiB are data and history MiB of that history a compaction frees,
// at revision 100; with noSpace, each reports the NOSPACE alarm raised
// for member 2.
func fillEtcd(f *etcdFixture, size, inUse, history int64, noSpace bool) {
	for _, m := range f.fake.Endpoints {
		m.Status.Revision, m.Status.DBSize, m.Status.DBSizeInUse, m.Compactable = 100, size*mib, inUse*mib, history*mib
		if noSpace {
			m.Status.Alarms = []etcd.Alarm{{Name: "NOSPACE", MemberID: 2}}
		}
	}
}

// etcdContainersReady has the kubelet report each member pod's etcd
// container running and ready, at its image.
func etcdContainersReady(t *testing.T, f *etcdFixture) {
	t.Helper()
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(f.obj.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: etcdcluster.ContainerName, Image: p.Spec.Containers[0].Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		if err := k8s.Status().Update(context.Background(), &p); err != nil {
			t.Fatal(err)
		}
	}
}

// etcdReady is f's Ready condition, as the API server has it.
func etcdReady(t *testing.T, f *etcdFixture) *metav1.Condition {
	t.Helper()
	get(t, f.obj)
	return meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready)
}

// noSpaceRemedied reports whether no member reports an alarm and every
// member's database is defragmented (its file the size of its data).
func noSpaceRemedied(f *etcdFixture) bool {
	for _, m := range f.fake.Endpoints {
		if len(m.Status.Alarms) > 0 || m.Status.DBSize != m.Status.DBSizeInUse {
			return false
		}
	}
	return true
}

// A cluster that raised NOSPACE is remedied with no one acting: the
// operator compacts, defragments the followers and then the leader, one
// per pass, and disarms the alarm, each step an event; meanwhile Ready is
// False, reason NoSpace, its message saying how far the remedy got. Then
// it is Ready again, records when each member was defragmented, and a
// pass at rest writes nothing.
func TestEtcdClusterRemediesNoSpace(t *testing.T) {
	f := newEtcdFixture(t, 3)
	f.pass()
	if c := etcdReady(t, f); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v before the alarm, want True", c)
	}
	fillEtcd(f, 1800, 1000, 900, true)
	var messages []string
	for range 10 {
		if noSpaceRemedied(f) {
			break
		}
		f.pass()
		c := etcdReady(t, f)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != etcdv1beta2.ReasonNoSpace || !strings.Contains(c.Message, "remedying") {
			t.Fatalf("Ready %+v while NOSPACE is remedied, want False NoSpace saying how far the remedy got", c)
		}
		messages = append(messages, c.Message[strings.Index(c.Message, "remedying"):])
	}
	// The fake's leader is member 1 (e-0): it goes last.
	want := []string{"compact 100", "defragment 2", "defragment 3", "defragment 1", "disarm NOSPACE 2"}
	if !slices.Equal(f.fake.Calls, want) {
		t.Errorf("calls %v, want %v", f.fake.Calls, want)
	}
	wantMessages := []string{
		"remedying: compacting the history before revision 100",
		"remedying: compacted to revision 100, defragmenting e-1 (1/3)",
		"remedying: compacted to revision 100, defragmenting e-2 (2/3)",
		"remedying: compacted to revision 100, defragmenting e-0 (3/3)",
		"remedying: compacted to revision 100, 3/3 members defragmented, disarming the alarm",
	}
	if !slices.Equal(messages, wantMessages) {
		t.Errorf("Ready's messages:\n%s\nwant:\n%s", strings.Join(messages, "\n"), strings.Join(wantMessages, "\n"))
	}
	evs := drainEvents(f.recorder)
	for _, reason := range []string{etcdv1beta2.EventCompacted, etcdv1beta2.EventDefragmented, etcdv1beta2.EventAlarmDisarmed} {
		if !hasEvent(evs, reason) {
			t.Errorf("events %v: want one of reason %s", evs, reason)
		}
	}
	f.pass()
	if c := etcdReady(t, f); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v once remedied, want True", c)
	}
	if f.obj.Status.NoSpaceRemedy != nil {
		t.Errorf("status.noSpaceRemedy %+v once the alarm is gone, want none", f.obj.Status.NoSpaceRemedy)
	}
	for _, m := range f.obj.Status.Members {
		if m.DefragmentedAt == nil {
			t.Errorf("member %s: no defragmentedAt recorded", m.Name)
		}
	}
	rv := f.obj.ResourceVersion
	f.pass()
	if get(t, f.obj); f.obj.ResourceVersion != rv {
		t.Errorf("a pass at rest wrote the EtcdCluster (resourceVersion %s, was %s)", f.obj.ResourceVersion, rv)
	}
}

// The members are defragmented on schedule when enough of their files is
// free pages: followers first, the leader last, one per pass, the cluster
// Ready all along; then not again within the interval, with no write.
func TestEtcdClusterDefragmentsFragmentedMembers(t *testing.T) {
	f := newEtcdFixture(t, 3)
	etcdContainersReady(t, f)
	f.pass()
	fillEtcd(f, 500, 100, 0, false)
	for range 5 {
		f.pass()
		if c := etcdReady(t, f); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %+v while a member is defragmented, want True", c)
		}
	}
	if want := []string{"defragment 2", "defragment 3", "defragment 1"}; !slices.Equal(f.fake.Calls, want) {
		t.Errorf("calls %v, want %v", f.fake.Calls, want)
	}
	if !hasEvent(drainEvents(f.recorder), etcdv1beta2.EventDefragmented) {
		t.Error("no Defragmented event")
	}
	// Fragmented again: not within the interval.
	fillEtcd(f, 500, 100, 0, false)
	get(t, f.obj)
	rv := f.obj.ResourceVersion
	f.pass()
	if get(t, f.obj); f.obj.ResourceVersion != rv || len(f.fake.Calls) != 3 {
		t.Errorf("within the interval: calls %v, resourceVersion %s (was %s); want no call and no write", f.fake.Calls, f.obj.ResourceVersion, rv)
	}
}

// The operator stops in the middle of a NOSPACE remedy, right before or
// right after each call to etcd takes effect, its writes lost or not; a
// new operator, which knows only what the status and the members say,
// finishes it: never disarming before every member is defragmented.
func TestEtcdNoSpaceRemedyStoppedAtEachCall(t *testing.T) {
	const calls = 5
	for i := range calls {
		for _, after := range []bool{false, true} {
			for _, killed := range []bool{false, true} {
				t.Run(fmt.Sprintf("stopped %s call %d, killed %v", map[bool]string{false: "before", true: "after"}[after], i, killed), func(t *testing.T) {
					f := newEtcdFixture(t, 3)
					f.pass()
					fillEtcd(f, 1800, 1000, 900, true)
					dead := &atomic.Bool{}
					old := controller.NewEtcdReconcilerAt(killable{Client: k8s, dead: dead}, f.fake.Dial, clock.RealClock{})
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					stopped := &atomic.Bool{}
					f.fake.Crash = func(n int, _ string) bool { return n == i }
					f.fake.CrashAfter = after
					f.fake.OnCrash = func() { stopped.Store(true); dead.Store(killed); cancel() }
					for range 10 {
						if stopped.Load() {
							break
						}
						etcdPass(t, f, old, ctx)
					}
					if !stopped.Load() {
						t.Fatalf("the operator made %v and was not stopped at its call %d", f.fake.Calls, i)
					}
					f.fake.Crash = func(_ int, call string) bool {
						if strings.HasPrefix(call, "disarm") {
							for url, m := range f.fake.Endpoints {
								if m.Status.DBSize != m.Status.DBSizeInUse {
									t.Errorf("disarmed with %s not defragmented (calls %v)", url, f.fake.Calls)
								}
							}
						}
						return false
					}
					r := controller.NewEtcdReconcilerAt(k8s, f.fake.Dial, clock.RealClock{})
					for range 10 {
						if noSpaceRemedied(f) {
							break
						}
						etcdPass(t, f, r, context.Background())
					}
					if !noSpaceRemedied(f) {
						t.Fatalf("not remedied: calls %v", f.fake.Calls)
					}
					etcdPass(t, f, r, context.Background())
					if c := etcdReady(t, f); c == nil || c.Status != metav1.ConditionTrue || f.obj.Status.NoSpaceRemedy != nil {
						t.Errorf("Ready %+v, status.noSpaceRemedy %+v once remedied: want True, none", c, f.obj.Status.NoSpaceRemedy)
					}
				})
			}
		}
	}
}
