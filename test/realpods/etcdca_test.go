package realpods

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
	"github.com/app-operator/app-operator/test/testenv"
)

// peerCAMove is a running EtcdCluster with TLS whose peers move from the
// tests' CA to a CA of its own, while clients write and read through the
// client Service the whole time. The server and operator Secrets stay on
// the tests' CA, which the clients use.
type peerCAMove struct {
	t             *testing.T
	c             client.Client
	e             *etcdv1beta2.EtcdCluster
	oldCA, newCA  *pki.CA
	ids           map[string]string
	claims        map[string]types.UID
	history       *etcdHistory
	leader        *leaderWatch
	start         time.Time
	oldPeerClient *tls.Config
	newPeerClient *tls.Config
}

// startPeerCAMove creates the cluster called name, waits for it to be
// Ready, and starts the clients.
func startPeerCAMove(t *testing.T, name string) *peerCAMove {
	c, ns := startEtcdOperator(t)
	e := createEtcdClusterWithTLS(t, c, ns, name)
	waitEtcdReady(t, c, e, 3, etcdVersion, 5*time.Minute)
	m := &peerCAMove{t: t, c: c, e: e, ids: etcdMemberIDs(e), claims: etcdClaimUIDs(t, c, e)}
	var err error
	if m.oldCA, err = testCA(); err != nil {
		t.Fatal(err)
	}
	if m.newCA, err = pki.NewCA("realpods-new-ca", time.Now(), 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	m.oldPeerClient, m.newPeerClient = m.peerClient(m.oldCA), m.peerClient(m.newCA)
	m.history = startEtcdHistory(t, clientServiceURL(t, c, e), 2)
	m.leader = watchLeader(t, c, e.DeepCopy())
	m.history.waitAcknowledged(t, writesBeforeFault)
	m.start = time.Now()
	return m
}

// writePeerSecret writes the peer Secret with a certificate of issuer and
// the CAs trusted in its ca.crt, and returns the certificate's serial and
// the TrustAnnotation of the pods made from then on.
func (m *peerCAMove) writePeerSecret(issuer *pki.CA, trusted ...*pki.CA) (*big.Int, string) {
	t, name, ns := m.t, m.e.Name, m.e.Namespace
	pair, err := issuer.Issue(name+"-peer", []string{"*." + name + "." + ns + ".svc"}, time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data := pair.Data()
	data[tlssecret.CAKey] = nil
	for _, ca := range trusted {
		data[tlssecret.CAKey] = append(data[tlssecret.CAKey], ca.PEM...)
	}
	writeSecret(t, m.c, ns, name+"-peer", data)
	server := &corev1.Secret{}
	if err := m.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-server"}, server); err != nil {
		t.Fatal(err)
	}
	return pair.Serial, etcdcluster.TrustOf(data[tlssecret.CAKey], server.Data[tlssecret.CAKey]).String()
}

// waitPeersServe waits until every member's peer port serves the
// certificate of serial to a peer of the new CA.
func (m *peerCAMove) waitPeersServe(serial *big.Int) {
	c, e := m.c, m.e
	testenv.EventuallyInNamespace(m.t, c, e.Namespace, 5*time.Minute, func() (bool, string) {
		var waiting []string
		for _, ep := range etcdEndpoints(context.Background(), c, e) {
			ip := strings.TrimSuffix(strings.TrimPrefix(ep, "https://"), ":"+strconv.Itoa(etcdcluster.ClientPort))
			if got, err := servedSerialWith(m.newPeerClient, ip, etcdcluster.PeerPort); err != nil || got.Cmp(serial) != 0 {
				waiting = append(waiting, fmt.Sprintf("%s serves %v (%v)", ip, got, err))
			}
		}
		return len(waiting) == 0, fmt.Sprint(waiting)
	})
}

// peerClient is the TLS configuration of a peer with a certificate of ca.
func (m *peerCAMove) peerClient(ca *pki.CA) *tls.Config {
	pair, err := ca.Issue("realpods-peer", nil, time.Now(), 24*time.Hour)
	if err != nil {
		m.t.Fatal(err)
	}
	cfg, err := chainOnlyTLS(pair)
	if err != nil {
		m.t.Fatal(err)
	}
	return cfg
}

// waitPodsTrust waits until every member pod has been made again since
// before (pod name to uid), carries trust as its TrustAnnotation, and is
// ready; then for the cluster to be Ready.
func (m *peerCAMove) waitPodsTrust(before map[string]types.UID, trust string) {
	t, c, e := m.t, m.c, m.e
	testenv.EventuallyInNamespace(t, c, e.Namespace, 10*time.Minute, func() (bool, string) {
		list := &corev1.PodList{}
		if err := c.List(context.Background(), list, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
			return false, err.Error()
		}
		var waiting []string
		for _, p := range list.Items {
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			if p.UID == before[p.Name] || p.Annotations[etcdcluster.TrustAnnotation] != trust || !ready {
				waiting = append(waiting, fmt.Sprintf("%s (same pod %v, CAs %s, ready %v)", p.Name, p.UID == before[p.Name], p.Annotations[etcdcluster.TrustAnnotation], ready))
			}
		}
		return len(list.Items) == len(before) && len(waiting) == 0, fmt.Sprintf("%d pods, waiting for %v", len(list.Items), waiting)
	})
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
}

// finish stops the clients and checks the end: the history linearizable
// with every acknowledged write kept, equal HashKV, the same members on
// the same claims, and every member's peer port taking a certificate of
// the new CA and, when oldRefused, refusing one of the old. It records the
// fault-matrix cell and returns the history.
func (m *peerCAMove) finish(fault string, oldRefused bool) (*etcdHistory, time.Duration, time.Duration) {
	t, c, e := m.t, m.c, m.e
	took := time.Since(m.start)
	time.Sleep(3 * time.Second)
	leaderless := m.leader.Stop()
	m.history.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)
	if got := etcdMemberIDs(e); !maps.Equal(got, m.ids) {
		t.Errorf("members %v after the move to a new CA, want %v kept", got, m.ids)
	}
	if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, m.claims) {
		t.Errorf("claims %v after the move to a new CA, want %v kept", got, m.claims)
	}
	for _, ep := range etcdEndpoints(context.Background(), c, e) {
		url := strings.TrimSuffix(ep, ":"+strconv.Itoa(etcdcluster.ClientPort)) + ":" + strconv.Itoa(etcdcluster.PeerPort) + "/version"
		if !peerTakes(url, m.newPeerClient) {
			t.Errorf("GET %s with a peer certificate of the new CA refused", url)
		}
		if oldRefused && peerTakes(url, m.oldPeerClient) {
			t.Errorf("GET %s with a peer certificate of the old CA taken", url)
		}
	}
	recordCell(faultCell{kind: "etcd", fault: fault, acked: m.history.acknowledged(), lost: m.history.lost, unavailable: leaderless, toReady: took})
	return m.history, took, leaderless
}

// peerTakes reports whether the peer port at url answers a client of cfg.
func peerTakes(url string, cfg *tls.Config) bool {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// A running EtcdCluster with TLS moves its peers to a new CA while
// clients write and read the whole time, in the three changes a move
// between CAs takes: both CAs in the peer Secret's ca.crt, the peer
// certificate issued from the new CA, the old CA taken out. The operator
// restarts every member, one at a time, after the first change and after
// the last, and none after the second: etcd reads its certificate on each
// connection, its CAs only at start. Then every member refuses a peer
// certificate of the old CA and takes one of the new, the same members run
// on the same claims, and the history is linearizable with every
// acknowledged write kept.
func TestEtcdClusterGivenANewPeerCAWhileRunningRestartsEachMemberWithoutLosingAWrite(t *testing.T) {
	m := startPeerCAMove(t, "rotating")
	c, e := m.c, m.e

	// 1. Both CAs trusted: every member restarts to load them.
	before := etcdPodUIDs(t, c, e)
	_, trust := m.writePeerSecret(m.oldCA, m.oldCA, m.newCA)
	m.waitPodsTrust(before, trust)

	// 2. The certificate of the new CA: read on each connection.
	before = etcdPodUIDs(t, c, e)
	serial, _ := m.writePeerSecret(m.newCA, m.oldCA, m.newCA)
	m.waitPeersServe(serial)
	if got := etcdPodUIDs(t, c, e); !maps.Equal(got, before) {
		t.Errorf("pods %v after the peer certificate of the new CA, want %v: none restarted", got, before)
	}

	// 3. The old CA taken out: every member restarts again.
	_, trust = m.writePeerSecret(m.newCA, m.newCA)
	m.waitPodsTrust(before, trust)

	h, took, leaderless := m.finish("TLS: the peer CA replaced through both CAs while clients write", true)
	t.Logf("new peer CA: Ready with every member on it %s after the first change; %d writes acknowledged, %d lost, %s without a leader; client errors: %s",
		took.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond), h.failureSummary())
}

// A running EtcdCluster with TLS gets a new peer CA at once, as an issuer
// given a new CA under cert-manager would give it: a certificate of the
// new CA and ca.crt with the new CA alone, while clients write and read
// the whole time. A member on the new CA and one on the old refuse each
// other, so no order of restarts keeps the quorum: the operator restarts
// no member while the members reach one another (Ready=False CAReplaced,
// no pod deleted), and each member on the old CA once it is down. Either
// the members go down (the connections they held are closed), and the
// operator restarts them, or the status says CAReplaced, and the test
// takes the outage the message offers, deleting the member pods. The
// cluster comes back Ready on the new CA with the same members on the
// same claims, and the history is linearizable with every acknowledged
// write kept.
func TestEtcdClusterGivenANewPeerCAAtOnceComesBackOnItWithoutLosingAWrite(t *testing.T) {
	m := startPeerCAMove(t, "swapped")
	c, e := m.c, m.e
	before := etcdPodUIDs(t, c, e)
	_, trust := m.writePeerSecret(m.newCA, m.newCA)
	var replaced string
	testenv.EventuallyInNamespace(t, c, e.Namespace, 5*time.Minute, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), e); err != nil {
			return false, err.Error()
		}
		restarted := !maps.Equal(etcdPodUIDs(t, c, e), before)
		cond := meta.FindStatusCondition(e.Status.Conditions, conditions.Ready)
		if cond != nil && cond.Reason == etcdv1beta2.ReasonCAReplaced && !restarted {
			replaced = cond.Message
			return true, ""
		}
		return restarted, fmt.Sprintf("Ready %+v, pods restarted %v", cond, restarted)
	})
	if replaced != "" {
		t.Logf("no member restarted while the members reach one another: Ready=False CAReplaced: %s; deleting the member pods", replaced)
		deleteEtcdPods(t, c, e, slices.Sorted(maps.Keys(before))...)
	}
	m.waitPodsTrust(before, trust)
	h, took, leaderless := m.finish("TLS: the peer CA replaced at once while clients write", true)
	t.Logf("peer CA replaced at once (members restarted by the test: %v): Ready with every member on it %s after the change; %d writes acknowledged, %d lost, %s without a leader; client errors: %s",
		replaced != "", took.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond), h.failureSummary())
}

// A running EtcdCluster with TLS whose peer CA is renewed with its key,
// the usual way to extend a CA's expiry, while clients write and read:
// the peer Secret gets a certificate of the renewed CA and a ca.crt with
// the renewed CA alone. What either CA certificate signed, the other
// verifies, so the members keep reaching one another whatever each has
// loaded: the operator restarts them one at a time (etcd reads its CAs
// only at start, and the old CA certificate will expire), never two down
// at once, and keeps the quorum; every member serves the new certificate
// (etcd reads it on each connection), the same members run on the same
// claims, and the history is linearizable with every acknowledged write
// kept.
func TestEtcdClusterGivenAPeerCARenewedWithItsKeyRestartsOneMemberAtATime(t *testing.T) {
	m := startPeerCAMove(t, "resigned")
	c, e := m.c, m.e
	waitEtcdPodsReady(t, c, e, 3)
	down := watchNotReady(c, e.Namespace, etcdcluster.Selector(e.Name))
	renewed, err := m.oldCA.Renewed(time.Now(), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := m.writePeerSecret(renewed, renewed)
	m.newPeerClient = m.peerClient(renewed)
	m.waitPeersServe(serial)
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	waitEtcdPodsReady(t, c, e, 3)
	most := down.Stop()
	if most > 1 {
		t.Errorf("%d member pods were not ready at once after the peer CA was renewed, want one at a time", most)
	}
	h, took, leaderless := m.finish("TLS: the peer CA renewed with its key (ca.crt the renewed CA alone) while clients write", false)
	t.Logf("peer CA renewed with its key: every member served the new certificate, at most %d member pod(s) not ready at once, Ready %s after the change; %d writes acknowledged, %d lost, %s without a leader",
		most, took.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond))
}

// A drain racing the operator's restarts: the peer CA renewed with its key
// (the operator restarts each member in turn) while a drain evicts every
// member pod, each eviction retried while the PodDisruptionBudget refuses
// it, as kubectl drain does. The operator's restarts go through the same
// Eviction API, so the budget judges both: at no point are two member
// pods not ready at once, the quorum is kept, and every acknowledged
// write is in the linearizable history.
func TestEtcdFaultDrainRacingTheMemberRestarts(t *testing.T) {
	m := startPeerCAMove(t, "drainrace")
	c, e := m.c, m.e
	waitEtcdPodsReady(t, c, e, 3)
	down := watchNotReady(c, e.Namespace, etcdcluster.Selector(e.Name))
	before := etcdPodUIDs(t, c, e)
	renewed, err := m.oldCA.Renewed(time.Now(), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := m.writePeerSecret(renewed, renewed)
	m.newPeerClient = m.peerClient(renewed)
	refused := evictEach(t, c, e.Namespace, before)
	m.waitPeersServe(serial)
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	waitEtcdPodsReady(t, c, e, 3)
	most := down.Stop()
	if most > 1 {
		t.Errorf("%d member pods were not ready at once while a drain raced the restarts, want one at a time", most)
	}
	h, took, leaderless := m.finish("a drain evicting every member pod while the operator restarts each (peer CA renewed)", false)
	t.Logf("drain raced the restarts: %d evictions refused by the budget, at most %d member pod(s) not ready at once, Ready %s after the change; %d writes acknowledged, %d lost, %s without a leader",
		refused, most, took.Round(100*time.Millisecond), h.acknowledged(), h.lost, leaderless.Round(100*time.Millisecond))
}

// evictEach evicts each pod of pods (name to uid) in namespace once, as a
// drain does: an eviction the PodDisruptionBudget refuses (429) is tried
// again a second later; a pod already replaced (by the operator's own
// restart) counts as gone. It returns how many evictions were refused.
func evictEach(t *testing.T, c client.Client, namespace string, pods map[string]types.UID) int {
	t.Helper()
	ctx := context.Background()
	refused := 0
	for name, uid := range pods {
		testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
			pod := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil || pod.UID != uid {
				return true, ""
			}
			err := c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
				ObjectMeta:    metav1.ObjectMeta{Namespace: namespace, Name: name},
				DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
			})
			if apierrors.IsTooManyRequests(err) {
				refused++
			}
			return err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err), fmt.Sprintf("evict %s: %v", name, err)
		})
	}
	return refused
}
