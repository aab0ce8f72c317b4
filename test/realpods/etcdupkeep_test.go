package realpods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/test/testenv"
	"github.com/app-operator/app-operator/test/workload"
)

// fillerSize pads every value the filling client writes: with no
// compaction, each put keeps its value in etcd's history, and a few
// hundred of them fill a 16Mi quota.
const fillerSize = 64 << 10

// etcdFiller is a client that never compacts: it puts a value of its own
// to a few keys, back to back, through the client Service, and records
// each put as a register workload's SET (see workload.Check): OK when etcd
// acknowledged it, Unknown when it may have been applied; a put etcd
// refused with NOSPACE was not applied, and is counted, not recorded.
type etcdFiller struct {
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	h       workload.History
	refused int
	// ackedAfterRefused counts the puts acknowledged after the first
	// refusal: the cluster took writes again.
	ackedAfterRefused int
	errs              map[string]int
}

func startEtcdFiller(t *testing.T, endpoint string) *etcdFiller {
	t.Helper()
	cli, err := etcdClient([]string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &etcdFiller{stop: cancel, done: make(chan struct{}), errs: map[string]int{}}
	for i := range 4 {
		f.h.Keys = append(f.h.Keys, fmt.Sprintf("fill/%d", i))
	}
	filler := strings.Repeat("x", fillerSize)
	go func() {
		defer close(f.done)
		defer cli.Close()
		for n := int64(1); ctx.Err() == nil; n++ {
			op := workload.Op{Kind: workload.Set, Key: f.h.Keys[n%int64(len(f.h.Keys))], Value: n}
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := cli.Put(c, op.Key, strconv.FormatInt(n, 10)+"|"+filler)
			cancel()
			op.At = time.Now()
			f.mu.Lock()
			switch {
			case err == nil:
				op.Outcome = workload.OK
				f.h.Ops = append(f.h.Ops, op)
				if f.refused > 0 {
					f.ackedAfterRefused++
				}
			case errors.Is(err, rpctypes.ErrNoSpace):
				f.refused++
			default:
				op.Outcome = workload.Unknown
				f.h.Ops = append(f.h.Ops, op)
			}
			if err != nil && ctx.Err() == nil {
				f.errs[err.Error()]++
			}
			f.mu.Unlock()
			if err != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(f.Stop)
	return f
}

// Stop ends the client.
func (f *etcdFiller) Stop() {
	f.stop()
	<-f.done
}

// counts are the puts refused and those acknowledged after the first
// refusal, so far.
func (f *etcdFiller) counts() (refused, ackedAfter int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused, f.ackedAfterRefused
}

func (f *etcdFiller) errors() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := make([]string, 0, len(f.errs))
	for m, n := range f.errs {
		parts = append(parts, fmt.Sprintf("%d× %s", n, m))
	}
	return strings.Join(parts, "; ")
}

// check stops the client and checks its history against what each key
// holds now: every acknowledged put took effect (the register checker;
// etcd's history is compacted, so the last value is what is read).
func (f *etcdFiller) check(t *testing.T, cli *clientv3.Client) workload.Report {
	t.Helper()
	f.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	final := map[string]workload.Value{}
	for _, key := range f.h.Keys {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		final[key] = workload.Absent
		if len(resp.Kvs) > 0 {
			n, _, _ := strings.Cut(string(resp.Kvs[0].Value), "|")
			final[key] = workload.Value{Present: true, Text: n}
		}
	}
	rep := workload.Check(f.h, final)
	for _, k := range rep.Violations() {
		t.Errorf("acknowledged write lost: %+v", k)
	}
	return rep
}

// An EtcdCluster whose backend quota is small (spec.maintenance) and a
// client that never compacts and writes past it: etcd raises NOSPACE and
// refuses the puts; with no one acting, the operator compacts,
// defragments each member (a Defragmented event each, defragmentedAt
// recorded) and disarms the alarm, and the cluster takes writes again. No
// member is restarted, removed or replaced, the status never says
// QuorumLost, and no acknowledged write is lost.
func TestEtcdFillsItsQuotaAndKeepsTakingWrites(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	startOperator(t, testenv.StartOptions{Namespaces: []string{ns}})
	e := &etcdv1beta2.EtcdCluster{}
	testenv.LoadSample(t, "etcd/etcd_v1beta2_etcdcluster.yaml", e, ns)
	e.Name = "quota"
	e.Spec.Version = etcdVersion
	e.Spec.Maintenance = &etcdv1beta2.MaintenancePolicy{BackendQuota: ptr.To(resource.MustParse("16Mi"))}
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	waitEtcdPodsReady(t, c, e, 3)
	ids := etcdMemberIDs(e)
	pods, claims, restarts := etcdPodUIDs(t, c, e), etcdClaimUIDs(t, c, e), etcdRestarts(t, c, e)

	// Every Ready status and reason the status gives meanwhile.
	stopWatch := watchReadyReasons(c, e)
	defer stopWatch()

	start := time.Now()
	f := startEtcdFiller(t, clientServiceURL(t, c, e))
	// The quota reached and freed: puts refused, then some acknowledged
	// again.
	testenv.Eventually(t, 8*time.Minute, func() (bool, string) {
		refused, after := f.counts()
		return refused > 0 && after >= 20, fmt.Sprintf("%d puts refused with NOSPACE, %d acknowledged after the first refusal (client errors: %s)", refused, after, f.errors())
	})
	took := time.Since(start)
	rep := f.check(t, etcdClientOf(t, c, e))
	refused, after := f.counts()
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	reasons := stopWatch()

	if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
		t.Fatal(err)
	}
	for _, m := range e.Status.Members {
		if m.DefragmentedAt == nil {
			t.Errorf("member %s: no defragmentedAt recorded", m.Name)
		}
	}
	evs := &corev1.EventList{}
	if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range evs.Items {
		seen[ev.Reason]++
	}
	for _, reason := range []string{etcdv1beta2.EventCompacted, etcdv1beta2.EventDefragmented, etcdv1beta2.EventAlarmDisarmed} {
		if seen[reason] == 0 {
			t.Errorf("no %s event (events seen: %v)", reason, seen)
		}
	}
	if reasons[string(metav1.ConditionFalse)+" "+etcdv1beta2.ReasonNoSpace] == 0 {
		t.Errorf("the status never said NoSpace (seen: %v)", reasons)
	}
	if reasons[string(metav1.ConditionFalse)+" "+etcdv1beta2.ReasonQuorumLost] > 0 {
		t.Errorf("the status said QuorumLost (seen: %v)", reasons)
	}
	t.Logf("Ready statuses seen: %v", reasons)
	checkMembersKept(t, c, e, "the quota filled and freed", ids, pods, claims)
	if got := etcdRestarts(t, c, e); !maps.Equal(got, restarts) {
		t.Errorf("container restarts %v, want %v: no member restarted", got, restarts)
	}
	var sizes []string
	for name := range ids {
		if st := memberStatus(c, e, name); st != nil {
			sizes = append(sizes, fmt.Sprintf("%s %s (%s in use)", name, resource.NewQuantity(st.DbSize, resource.BinarySI), resource.NewQuantity(st.DbSizeInUse, resource.BinarySI)))
		}
	}
	t.Logf("quota 16Mi filled and freed in %s: %d puts acknowledged (%d after the first refusal), %d refused with NOSPACE, %d lost; events %v; databases now: %s; client errors: %s",
		took.Round(100*time.Millisecond), f.h.Acked(), after, refused, rep.Lost(), seen, strings.Join(sizes, ", "), f.errors())
}
