package controller_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/etcd"
)

// Any alarm etcd raises makes an EtcdCluster not Ready, with a reason
// naming it (the cluster refuses writes while it is raised), whatever the
// members' health; the alarm disarmed, it is Ready again.
func TestEtcdClusterWithAnAlarmRaisedIsNotReady(t *testing.T) {
	ready := func(t *testing.T, f *etcdFixture) *metav1.Condition {
		t.Helper()
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(f.obj), f.obj); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(f.obj.Status.Conditions, conditions.Ready)
	}
	for _, tt := range []struct {
		alarm, reason, message string
	}{
		{alarm: "CORRUPT", reason: etcdv1beta2.ReasonCorrupt, message: "CORRUPT alarm for member e-1"},
		{alarm: "NOSPACE", reason: etcdv1beta2.ReasonNoSpace, message: "NOSPACE alarm"},
		{alarm: "OVERHEAT", reason: etcdv1beta2.ReasonAlarm, message: "OVERHEAT alarm"},
	} {
		t.Run(tt.alarm, func(t *testing.T) {
			f := newEtcdFixture(t, 3)
			f.pass()
			if c := ready(t, f); c == nil || c.Status != metav1.ConditionTrue {
				t.Fatalf("Ready %+v before the alarm, want True", c)
			}
			for _, m := range f.fake.Endpoints {
				m.Status.Alarms = []etcd.Alarm{{Name: tt.alarm, MemberID: 2}}
			}
			f.pass()
			if c := ready(t, f); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Errorf("Ready %+v with the %s alarm raised, want False %s saying %q", c, tt.alarm, tt.reason, tt.message)
			}
			for _, m := range f.fake.Endpoints {
				m.Status.Alarms = nil
			}
			f.pass()
			if c := ready(t, f); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("Ready %+v once the alarm is disarmed, want True", c)
			}
		})
	}
}
