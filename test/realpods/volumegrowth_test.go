package realpods

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// claimWatch follows a cluster's claims from the test: how many were
// asked for more than their volume had at once, and the order in which
// each was first asked for the size.
type claimWatch struct {
	stop context.CancelFunc
	done chan struct{}

	mu sync.Mutex
	// mostGrowing is the most claims seen growing (request above
	// capacity) in one poll; order, the claims in the order they were
	// first seen asking for size.
	mostGrowing int
	order       []string
}

func watchClaims(c client.Client, namespace string, selector map[string]string, size resource.Quantity) *claimWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &claimWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			claims := &corev1.PersistentVolumeClaimList{}
			if err := c.List(ctx, claims, client.InNamespace(namespace), client.MatchingLabels(selector)); err == nil {
				growing := 0
				w.mu.Lock()
				for _, pvc := range claims.Items {
					requested, capacity := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
					if requested.Cmp(capacity) > 0 {
						growing++
					}
					if requested.Cmp(size) >= 0 && !slices.Contains(w.order, pvc.Name) {
						w.order = append(w.order, pvc.Name)
					}
				}
				w.mostGrowing = max(w.mostGrowing, growing)
				w.mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

// Stop ends the watch and returns what it saw.
func (w *claimWatch) Stop() (int, []string) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mostGrowing, slices.Clone(w.order)
}

// An EtcdCluster on the StorageClass that allows volume expansion: its
// spec.storage.size raised from 1Gi to 2Gi while clients write, every
// member's claim (and its volume) grows, one claim at a time in the order
// of the members, with no pod restarted and no member changed; every
// acknowledged write is in etcd's history, which stays linearizable, and
// the members hold the same data.
func TestEtcdClaimsGrowOneAtATimeWhileClientsWrite(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx := context.Background()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name = "grow"
	e.Spec.Version = etcdVersion
	small, large := resource.MustParse("1Gi"), resource.MustParse("2Gi")
	e.Spec.Storage = &etcdv1beta2.Storage{Size: &small, StorageClassName: cluster.StorageClassExpandable}
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	waitEtcdPodsReady(t, c, e, 3)
	cell := watchEtcdCell(t, c, e)
	ids := etcdMemberIDs(e)
	selector := etcdcluster.Selector(e.Name)
	pods := func() map[string]string {
		t.Helper()
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
			t.Fatal(err)
		}
		uids := map[string]string{}
		for _, p := range list.Items {
			uids[p.Name] = string(p.UID)
		}
		return uids
	}
	before := pods()

	claims := watchClaims(c, ns, resources.Labels(selector), large)
	start := time.Now()
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Storage.Size = &large })
	want := []string{etcdcluster.ClaimName("grow-0"), etcdcluster.ClaimName("grow-1"), etcdcluster.ClaimName("grow-2")}
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		var short []string
		for _, name := range want {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
				return false, err.Error()
			}
			pv := &corev1.PersistentVolume{}
			if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
				return false, err.Error()
			}
			capacity, volume := pvc.Status.Capacity[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
			if capacity.Cmp(large) < 0 || volume.Cmp(large) < 0 {
				short = append(short, fmt.Sprintf("%s (claim %s, volume %s)", name, capacity.String(), volume.String()))
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(e.Status.Conditions, conditions.VolumeExpansion)
		if len(short) > 0 || cond == nil || cond.Reason != conditions.ReasonExpanded {
			return false, fmt.Sprintf("claims below %s: %v; VolumeExpansion %+v", large.String(), short, cond)
		}
		return true, ""
	})
	grown := time.Since(start)
	mostGrowing, order := claims.Stop()
	waitEtcdReady(t, c, e, 3, etcdVersion, time.Minute)

	if mostGrowing != 1 {
		t.Errorf("at most %d claims growing at once, want 1", mostGrowing)
	}
	if !slices.Equal(order, want) {
		t.Errorf("claims asked for %s in the order %v, want %v", large.String(), order, want)
	}
	if after := pods(); !maps.Equal(after, before) {
		t.Errorf("member pods %v after the claims grew, want the same pods %v: none restarted", after, before)
	}
	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after the claims grew, want %v", got, ids)
	}
	t.Logf("3 claims grown from %s to %s one at a time in %s", small.String(), large.String(), grown.Round(100*time.Millisecond))
	cell.h.waitAcknowledged(t, writesBeforeFault)
	cell.leader.Stop()
	cell.h.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)
	t.Logf("%d writes acknowledged, %d lost; client errors: %s", cell.h.acknowledged(), cell.h.lost, cell.h.failureSummary())
}

// A RedisEnterpriseCluster with persistence on the StorageClass that
// allows volume expansion: spec.persistentSpec.volumeSize raised from 1Gi
// to 2Gi while a client writes (SET, DEL, INCR, each acknowledged by
// WAIT 1): every node's claim (and its volume) grows, one claim at a
// time, with no pod restarted and the primary kept; the status says
// Expanded once all are at the size; no acknowledged write is lost.
func TestRedisClaimsGrowOneAtATimeWhileAClientWrites(t *testing.T) {
	needCluster(t)
	t.Parallel()
	ctx := context.Background()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, cellOperatorOptions(ns))
	r := newRedisCellWith(t, c, ns, "grow", false, 3,
		fmt.Sprintf("  persistentSpec: {enabled: true, storageClassName: %s, volumeSize: 1Gi}\n", cluster.StorageClassExpandable))
	primary := r.rec.Status.Primary
	before := map[string]string{}
	for _, n := range r.rec.Status.Nodes {
		before[n.Name] = string(r.podUID(n.Name))
	}
	w := r.startWriterWaiting("grow", 1, cellWritePause)
	waitWrites(t, w, 200)

	large := resource.MustParse("2Gi")
	claims := watchClaims(c, ns, resources.Labels(redisenterprisecluster.Selector(r.rec.Name)), large)
	start := time.Now()
	r.refresh()
	r.rec.Spec.PersistentSpec.VolumeSize = &large
	if err := c.Update(ctx, r.rec); err != nil {
		t.Fatal(err)
	}
	want := []string{"data-grow-0", "data-grow-1", "data-grow-2"}
	testenv.EventuallyInNamespace(t, c, ns, 5*time.Minute, func() (bool, string) {
		var short []string
		for _, name := range want {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
				return false, err.Error()
			}
			if capacity := pvc.Status.Capacity[corev1.ResourceStorage]; capacity.Cmp(large) < 0 {
				short = append(short, fmt.Sprintf("%s (%s)", name, capacity.String()))
			}
		}
		r.refresh()
		cond := meta.FindStatusCondition(r.rec.Status.Conditions, conditions.VolumeExpansion)
		if len(short) > 0 || cond == nil || cond.Reason != conditions.ReasonExpanded {
			return false, fmt.Sprintf("claims below %s: %v; VolumeExpansion %+v", large.String(), short, cond)
		}
		return true, ""
	})
	grown := time.Since(start)
	mostGrowing, order := claims.Stop()
	r.waitRunning(time.Minute)
	if mostGrowing != 1 {
		t.Errorf("at most %d claims growing at once, want 1", mostGrowing)
	}
	if len(order) != len(want) {
		t.Errorf("claims asked for %s: %v, want all of %v", large.String(), order, want)
	}
	after := map[string]string{}
	for _, n := range r.rec.Status.Nodes {
		after[n.Name] = string(r.podUID(n.Name))
	}
	if !maps.Equal(after, before) {
		t.Errorf("node pods %v after the claims grew, want the same pods %v: none restarted", after, before)
	}
	if r.rec.Status.Primary != primary {
		t.Errorf("the primary is %s after the claims grew, want %s kept", r.rec.Status.Primary, primary)
	}
	acked, lost := r.finish(w, "persistence on: every claim grown from 1Gi to 2Gi, one at a time", grown)
	t.Logf("3 claims grown in the order %v in %s; %d writes acknowledged, %d lost", order, grown.Round(100*time.Millisecond), acked, lost)
}
