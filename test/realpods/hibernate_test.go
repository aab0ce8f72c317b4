package realpods

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// hibernateBound is how long stopping every pod, or starting them again,
// may take.
const hibernateBound = 5 * time.Minute

// A Redis cluster with persistence, hibernated while the register client
// writes and woken again, loses no acknowledged write: every node stops
// (no pod left) and keeps its claim, the status says Hibernated, and once
// woken the cluster runs with a primary the election chose from what the
// nodes hold. An etcd cluster hibernated and woken keeps its members (the
// same IDs), its claims and every key.
func TestHibernateAndWake(t *testing.T) {
	needCluster(t)
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		c := operatorClient(t)
		ns := testenv.NewNamespace(t, c)
		startOperator(t, cellOperatorOptions(ns))
		r := newRedisCell(t, c, ns, "sleepy", true, 3)
		claims := claimUIDs(t, c, ns, redisenterprisecluster.Selector(r.rec.Name))
		w := r.startWriterWaiting("hibernate", 1, cellWritePause)
		waitWrites(t, w, 300)
		before := r.rec.Status.Primary

		setRedisHibernate(t, r, true)
		asked := time.Now()
		waitCondition(t, c, r.rec, func() []metav1.Condition { return r.rec.Status.Conditions },
			conditions.Ready, metav1.ConditionTrue, conditions.ReasonHibernated, hibernateBound)
		slept := time.Since(asked)
		h := w.Stop()
		if pods := podsOf(t, c, ns, redisenterprisecluster.Selector(r.rec.Name)); len(pods) > 0 {
			t.Errorf("pods %v while Hibernated, want none", pods)
		}
		if got := claimUIDs(t, c, ns, redisenterprisecluster.Selector(r.rec.Name)); !maps.Equal(got, claims) {
			t.Errorf("claims %v while hibernated, want %v kept", got, claims)
		}
		if r.rec.Status.State != redisv1alpha1.StateHibernated || r.rec.Status.Primary != before {
			t.Errorf("state %s, primary %q while hibernated; want Hibernated and %s kept", r.rec.Status.State, r.rec.Status.Primary, before)
		}

		setRedisHibernate(t, r, false)
		woken := time.Now()
		after := r.waitRunning(hibernateBound)
		t.Logf("hibernated in %v, %d writes acknowledged before (%d refused or failed); woken in %v, primary %s before, %s after",
			slept.Round(time.Millisecond), h.Acked(), w.Errors(), time.Since(woken).Round(time.Millisecond), before, after)
		if lost := r.lostWrites(h); lost > 0 {
			t.Errorf("%d keys lost an acknowledged write across the hibernation", lost)
		}
		if got := claimUIDs(t, c, ns, redisenterprisecluster.Selector(r.rec.Name)); !maps.Equal(got, claims) {
			t.Errorf("claims %v after the wake, want %v", got, claims)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		c, e := runEtcdSample(t, "sleepy", "3.6.16")
		keys := writeKeys(t, etcdClientOf(t, c, e), "hibernate", 50)
		ids, claims := etcdMemberIDs(e), etcdClaimUIDs(t, c, e)

		setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Hibernate = true })
		asked := time.Now()
		waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
			conditions.Ready, metav1.ConditionTrue, conditions.ReasonHibernated, hibernateBound)
		slept := time.Since(asked)
		if pods := etcdPodUIDs(t, c, e); len(pods) > 0 {
			t.Errorf("pods %v while Hibernated, want none", pods)
		}
		if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
			t.Errorf("status.members %v while hibernated, want %v kept", got, ids)
		}
		if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, claims) {
			t.Errorf("claims %v while hibernated, want %v kept", got, claims)
		}

		setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Hibernate = false })
		woken := time.Now()
		waitEtcdReady(t, c, e, 3, "3.6.16", hibernateBound)
		waitEtcdPodsReady(t, c, e, 3)
		t.Logf("hibernated in %v, woken in %v", slept.Round(time.Millisecond), time.Since(woken).Round(time.Millisecond))
		checkKeys(t, c, e, keys)
		if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
			t.Errorf("status.members %v after the wake, want %v: the same members", got, ids)
		}
		if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, claims) {
			t.Errorf("claims %v after the wake, want %v", got, claims)
		}
	})
}

// setRedisHibernate sets r's spec.hibernate, retrying on a conflict.
func setRedisHibernate(t *testing.T, r *redisCluster, on bool) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		if err := r.c.Get(context.Background(), client.ObjectKeyFromObject(r.rec), r.rec); err != nil {
			return false, err.Error()
		}
		r.rec.Spec.Hibernate = on
		err := r.c.Update(context.Background(), r.rec)
		return err == nil, fmt.Sprint(err)
	})
}

// podsOf names the pods of selector in ns.
func podsOf(t *testing.T, c client.Client, ns string, selector map[string]string) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}

// claimUIDs maps the claims of selector in ns to their uids.
func claimUIDs(t *testing.T, c client.Client, ns string, selector map[string]string) map[string]types.UID {
	t.Helper()
	claims := &corev1.PersistentVolumeClaimList{}
	if err := c.List(context.Background(), claims, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, p := range claims.Items {
		uids[p.Name] = p.UID
	}
	return uids
}
