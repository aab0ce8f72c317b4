package controller_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// A member the operator adds is recorded with when it was added, and the
// time stays, pass after pass, while the member has not joined: the join
// timeout counts from it, whatever restarts its pod.
func TestEtcdClusterRecordsWhenItAddedAMember(t *testing.T) {
	f := newEtcdFixture(t, 4)
	f.pass()
	addedAt := func() *etcdv1beta2.EtcdMember {
		t.Helper()
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(f.obj), f.obj); err != nil {
			t.Fatal(err)
		}
		for i, m := range f.obj.Status.Members {
			if m.Name == "e-3" {
				return &f.obj.Status.Members[i]
			}
		}
		return nil
	}
	first := addedAt()
	if first == nil || first.AddedAt == nil || !first.Learner {
		t.Fatalf("status.members %+v after a pass toward a fourth member (calls %v): want e-3, a learner, with addedAt", f.obj.Status.Members, f.fake.Calls)
	}
	for _, m := range f.obj.Status.Members {
		if m.Name != "e-3" && m.AddedAt != nil {
			t.Errorf("member %s, joined, has addedAt %s", m.Name, m.AddedAt)
		}
	}
	when := first.AddedAt.DeepCopy()
	f.pass()
	if again := addedAt(); again == nil || again.AddedAt == nil || !again.AddedAt.Equal(when) {
		t.Errorf("e-3 after another pass: %+v, want addedAt %s kept", again, when)
	}
}
