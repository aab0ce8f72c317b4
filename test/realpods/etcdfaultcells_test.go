package realpods

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/test/testenv"
)

// cellJoinTimeout is the join timeout of the operator of the cell whose
// learner never comes back: long enough for a new member to join on a
// busy machine, shorter than the default so the cell takes less time.
const cellJoinTimeout = 90 * time.Second

// etcdCell is a cell of the fault matrix under way: an EtcdCluster of
// three members with its own operator, two clients putting and getting
// through the client Service the whole time, and a watch of its leader.
type etcdCell struct {
	c      client.Client
	e      *etcdv1beta2.EtcdCluster
	h      *etcdHistory
	leader *leaderWatch
}

// startEtcdCell starts the sample called name at version, and the
// clients and the watch once it is Ready.
func startEtcdCell(t *testing.T, name, version string) *etcdCell {
	t.Helper()
	c, e := startEtcdSample(t, name, version)
	return watchEtcdCell(t, c, e)
}

// watchEtcdCell starts the clients and the watch of the Ready cluster e.
func watchEtcdCell(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) *etcdCell {
	t.Helper()
	cell := &etcdCell{c: c, e: e}
	cell.h = startEtcdHistory(t, clientServiceURL(t, c, e), 2)
	cell.leader = watchLeader(t, c, e)
	// Some writes acknowledged before the fault.
	cell.h.waitAcknowledged(t, writesBeforeFault)
	return cell
}

// finish stops the clients and the watch, checks what the clients saw
// (every acknowledged put in etcd's history, the history linearizable)
// and that every member holds the same data, and records the cell with
// toReady, how long the status took to say Ready after the fault.
func (cell *etcdCell) finish(t *testing.T, fault string, toReady time.Duration) {
	t.Helper()
	c, e, h := cell.c, cell.e, cell.h
	// Some writes acknowledged after Ready.
	h.waitAcknowledged(t, writesBeforeFault)
	leaderless := cell.leader.Stop()
	h.check(t, etcdClientOf(t, c, e))
	checkHashKV(t, c, e)
	if h.acknowledged() == 0 {
		t.Errorf("no write was acknowledged (clients saw: %s)", h.failureSummary())
	}
	if leaderless > quorumlessBound {
		t.Errorf("no member served a linearizable read for %s, want at most %s: the cluster lost its quorum", leaderless, quorumlessBound)
	}
	recordCell(faultCell{kind: "etcd", fault: fault, acked: h.acknowledged(), lost: h.lost, unavailable: leaderless, toReady: toReady})
	t.Logf("%s: Ready %s after; %d writes acknowledged, %d lost, %d refused with NOSPACE, %s without a leader; client errors: %s",
		fault, toReady.Round(100*time.Millisecond), h.acknowledged(), h.lost, h.refused, leaderless.Round(100*time.Millisecond), h.failureSummary())
}

// memberStatus asks the pod name of e, at its own IP, for its member's
// status; nil when it does not answer.
func memberStatus(c client.Client, e *etcdv1beta2.EtcdCluster, name string) *clientv3.StatusResponse {
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: e.Namespace, Name: name}, pod); err != nil || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
		return nil
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(etcdcluster.ClientPort))
	cli, err := etcdClient([]string{url})
	if err != nil {
		return nil
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := cli.Status(ctx, url)
	if err != nil {
		return nil
	}
	return st
}

// The leader's pod deleted while clients write: the other two elect a
// new leader, the StatefulSet brings the pod back on its claim, and the
// member rejoins with its data as the same member (same ID, same claim:
// not removed and added again). The status is Ready again, every
// acknowledged write is kept, the history is linearizable and every
// member ends with the same HashKV.
func TestEtcdFaultLeaderPodDeletedRejoinsAsTheSameMember(t *testing.T) {
	cell := startEtcdCell(t, "leader", etcdVersion)
	c, e := cell.c, cell.e
	ids, claims := etcdMemberIDs(e), etcdClaimUIDs(t, c, e)
	victim := e.Status.Leader
	oldLeader, _ := strconv.ParseUint(ids[victim], 16, 64)
	if victim == "" || oldLeader == 0 {
		t.Fatalf("no leader recorded: %+v", e.Status)
	}
	members := watchEtcd(t, c, e)

	start := time.Now()
	deleteEtcdPods(t, c, e, victim)
	// A new leader: a member other than the one deleted, as the others
	// say.
	var newLeader string
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		for name := range ids {
			if name == victim {
				continue
			}
			if st := memberStatus(c, e, name); st != nil && st.Leader != 0 && st.Leader != oldLeader {
				newLeader = strconv.FormatUint(st.Leader, 16)
				return true, ""
			}
		}
		return false, fmt.Sprintf("no member but %s knows a new leader", victim)
	})
	elected := time.Since(start)
	waitMemberServes(t, c, e, victim, ids[victim])
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	toReady := time.Since(start)
	members.Stop()

	if got := etcdMemberIDs(e); !maps.Equal(got, ids) {
		t.Errorf("members %v after the leader's pod was deleted, want the same members %v: none removed and added again", got, ids)
	}
	if got := etcdClaimUIDs(t, c, e); !maps.Equal(got, claims) {
		t.Errorf("claims %v after the leader's pod was deleted, want %v: the member back on its own", got, claims)
	}
	if !slices.Equal(members.sizes, []int{3}) {
		t.Errorf("member counts seen %v, want 3 throughout: no member removed", members.sizes)
	}
	t.Logf("leader %s (%x) deleted: member %s elected within %s; %s back as the same member, Ready in %s",
		victim, oldLeader, newLeader, elected.Round(100*time.Millisecond), victim, toReady.Round(100*time.Millisecond))
	cell.finish(t, "the leader's pod deleted", toReady)
}

// waitLearnerServing waits, while e grows from three members to four,
// until the fourth member's etcd answers at its pod's IP as a learner (it
// has started and catches up, not promoted yet), and returns the
// member's ID and its pod.
func waitLearnerServing(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) (uint64, *corev1.Pod) {
	t.Helper()
	name := etcdcluster.MemberName(e.Name, 3)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if st := memberStatus(c, e, name); st != nil {
			if !st.IsLearner {
				t.Fatalf("member %s (%x) answered first as a voting member: it was promoted before it could be seen as a learner", name, st.Header.MemberId)
			}
			pod := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: e.Namespace, Name: name}, pod); err != nil {
				t.Fatal(err)
			}
			return st.Header.MemberId, pod
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %s did not answer as a learner within 3 min", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPodExists waits until the named pod exists.
func waitPodExists(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{}) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("pod %s was not made within 3 min", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitJoiningPodRunning waits, while e grows from three members to four,
// until the fourth member's pod runs its etcd container, and returns it.
func waitJoiningPodRunning(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: e.Namespace, Name: etcdcluster.MemberName(e.Name, 3)}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := c.Get(context.Background(), key, pod); err == nil {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == etcdcluster.ContainerName && cs.State.Running != nil {
					return pod
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s did not run its etcd within 3 min", key.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// joiningMember returns the ID of the member of pod name, as the other
// members list it, and fails the test unless it is a learner or has not
// started: a voting member frozen is another fault than this cell's.
func joiningMember(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, name string) uint64 {
	t.Helper()
	var others []string
	for _, url := range etcdEndpoints(context.Background(), c, e) {
		if !strings.Contains(url, podIPOf(t, c, e.Namespace, name)+":") {
			others = append(others, url)
		}
	}
	cli, err := etcdClient(others)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if slices.ContainsFunc(m.PeerURLs, func(u string) bool { return strings.Contains(u, "//"+name+".") }) {
			if !m.IsLearner && m.Name != "" {
				t.Fatalf("member %s (%x) was promoted before its pod was frozen", name, m.ID)
			}
			return m.ID
		}
	}
	t.Fatalf("no member of pod %s in %+v", name, list.Members)
	return 0
}

// podIPOf returns the IP of pod namespace/name.
func podIPOf(t *testing.T, c client.Client, namespace, name string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return pod.Status.PodIP
}

// checkAllVoting checks that e's status lists size members, every one
// started (named), voting and healthy.
func checkAllVoting(t *testing.T, e *etcdv1beta2.EtcdCluster, size int) {
	t.Helper()
	if len(e.Status.Members) != size {
		t.Errorf("status.members %+v, want %d", e.Status.Members, size)
	}
	for _, m := range e.Status.Members {
		if m.Learner || !m.Healthy || m.Version == "" {
			t.Errorf("member %+v, want it started, voting and healthy", m)
		}
	}
}

// Grown from three members to four, the new member's pod deleted while
// the member is still a learner (its etcd running, the member not
// promoted), with the operator away: the operator is stopped once the
// learner's pod exists (it has added the member and scaled the
// StatefulSet; the pod has yet to start and catch up, so no pass can have
// promoted it), the learner is seen serving as a learner, its pod is
// deleted, and the operator starts again. The cluster keeps its quorum,
// the learner joins (back on its claim, or added again if it had none),
// and the cluster ends with four members, every one started and voting,
// with every acknowledged write, a linearizable history and the same
// HashKV on every member.
func TestEtcdFaultLearnerPodDeletedWhileJoiningStillJoins(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c := operatorClient(t)
	ns := testenv.NewNamespace(t, c)
	opts := testenv.StartOptions{Namespaces: []string{ns}}
	op := startOperator(t, opts)
	e := createEtcdSample(t, c, ns, "learner", etcdVersion)
	cell := watchEtcdCell(t, c, e)
	members := watchEtcd(t, c, e)
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 4 })
	waitPodExists(t, c, ns, etcdcluster.MemberName(e.Name, 3))
	op.Stop()
	learner, pod := waitLearnerServing(t, c, e)
	start := time.Now()
	if err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s deleted while member %x was a learner, the operator away", pod.Name, learner)
	startOperator(t, opts)
	waitEtcdReady(t, c, e, 4, etcdVersion, 6*time.Minute)
	toReady := time.Since(start)
	members.Stop()
	checkAllVoting(t, e, 4)
	t.Logf("Ready with 4 members %s after; %s is member %s (the learner was %x); member counts seen %v, at most %d change(s) in flight",
		toReady.Round(100*time.Millisecond), pod.Name, etcdMemberIDs(e)[pod.Name], learner, members.sizes, members.inFlight)
	if members.inFlight > 1 {
		t.Errorf("%d membership changes were in flight at once, want at most one", members.inFlight)
	}
	cell.finish(t, "a learner's pod deleted while it joins, the operator away (3 -> 4)", toReady)
}

// Grown from three members to four, the new member's pod frozen
// (SIGSTOP of its processes) while the member is still a learner: it
// never comes back. The learner must not block the scale: once its pod
// has run for the join timeout without it joining, the operator
// removes it and adds a member again, whose new pod joins. The cluster
// keeps its quorum throughout and ends with four members, every one
// started and voting, with every acknowledged write, a linearizable
// history and the same HashKV on every member. The cell's operator waits
// cellJoinTimeout, not the default five minutes.
func TestEtcdFaultLearnerThatNeverComesBackDoesNotBlockTheScale(t *testing.T) {
	needCluster(t)
	t.Parallel()
	c, e := runEtcdSampleWith(t, "frozen", etcdVersion, controller.Options{EtcdJoinTimeout: cellJoinTimeout})
	cell := watchEtcdCell(t, c, e)
	members := watchEtcd(t, c, e)
	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Size = 4 })
	// Frozen as soon as its etcd runs: a learner that has caught up can be
	// promoted within a pass, before a freeze that waited for it to answer.
	pod := waitJoiningPodRunning(t, c, e)
	claim := etcdClaimUIDs(t, c, e)[etcdcluster.ClaimName(pod.Name)]
	freezePod(t, c, e.Namespace, pod.Name)
	start := time.Now()
	learner := joiningMember(t, c, e, pod.Name)
	t.Logf("pod %s frozen while member %x was a learner or not started", pod.Name, learner)
	waitEtcdReady(t, c, e, 4, etcdVersion, cellJoinTimeout+6*time.Minute)
	toReady := time.Since(start)
	members.Stop()
	checkAllVoting(t, e, 4)
	id := etcdMemberIDs(e)[pod.Name]
	if id == strconv.FormatUint(learner, 16) {
		t.Errorf("%s is still member %s, the frozen learner's ID: want it removed and added again", pod.Name, id)
	}
	if now := etcdPodUIDs(t, c, e)[pod.Name]; now == pod.UID {
		t.Errorf("pod %s is still the frozen pod %s", pod.Name, pod.UID)
	}
	// The member added again starts on a claim of its own, not on the
	// removed learner's data.
	if now := etcdClaimUIDs(t, c, e)[etcdcluster.ClaimName(pod.Name)]; now == claim {
		t.Errorf("member %s runs on the frozen learner's claim %s, want a new one", pod.Name, claim)
	}
	t.Logf("Ready with 4 members %s after; %s is member %s (the frozen learner was %x); member counts seen %v, at most %d change(s) in flight",
		toReady.Round(100*time.Millisecond), pod.Name, id, learner, members.sizes, members.inFlight)
	if members.inFlight > 1 {
		t.Errorf("%d membership changes were in flight at once, want at most one", members.inFlight)
	}
	cell.finish(t, "a learner frozen while it joins, never back (3 -> 4)", toReady)
}

// setNoSpaceAlarm raises (activate) or disarms etcd's NOSPACE alarm for
// member id, through the Alarm call of etcd's maintenance API.
//
// Raising it is the request a member makes itself when a write finds its
// backend at its quota (--quota-backend-bytes): the alarm goes through
// raft, and every member then applies writes with its capped applier,
// which refuses each put with "mvcc: database space exceeded" until the
// alarm is disarmed. The cell raises it itself, with the members far
// from their quota (TestEtcdFillsItsQuotaAndKeepsTakingWrites fills a
// small one); what follows is the same.
func setNoSpaceAlarm(ctx context.Context, cli *clientv3.Client, id uint64, raise bool) error {
	return setAlarm(ctx, cli, id, pb.AlarmType_NOSPACE, raise)
}

// setAlarm raises (activate) or disarms etcd's alarm for member id,
// through the Alarm call of etcd's maintenance API.
func setAlarm(ctx context.Context, cli *clientv3.Client, id uint64, alarm pb.AlarmType, raise bool) error {
	if !raise {
		_, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: id, Alarm: alarm})
		return err
	}
	_, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Alarm(ctx, &pb.AlarmRequest{
		Action: pb.AlarmRequest_ACTIVATE, MemberID: id, Alarm: alarm})
	return err
}

// etcd's NOSPACE alarm raised while clients write (through the Alarm
// call of etcd's maintenance API; see setNoSpaceAlarm): etcd refuses the
// puts, and the status says Ready=False NoSpace (not QuorumLost) while
// the operator remedies it with no one acting: it compacts, defragments
// each member and disarms the alarm, and restarts, removes and replaces
// nothing. The status is Ready again; every acknowledged write is kept,
// the history is linearizable and every member ends with the same
// HashKV.
func TestEtcdFaultNoSpaceAlarmIsRemediedWithNoMemberChanged(t *testing.T) {
	ctx := context.Background()
	cell := startEtcdCell(t, "nospace", etcdVersion)
	c, e, h := cell.c, cell.e, cell.h
	ids := etcdMemberIDs(e)
	pods, claims, restarts := etcdPodUIDs(t, c, e), etcdClaimUIDs(t, c, e), etcdRestarts(t, c, e)
	admin := etcdClientOf(t, c, e)
	// The alarm as a member whose backend is full raises it: the leader's.
	id, _ := strconv.ParseUint(ids[e.Status.Leader], 16, 64)

	// Every Ready status and reason the status gives meanwhile.
	stopWatch := watchReadyReasons(c, e)

	rc, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := setNoSpaceAlarm(rc, admin, id, true)
	cancel()
	if err != nil {
		t.Fatalf("raise the NOSPACE alarm: %v", err)
	}
	start := time.Now()
	cond := waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonNoSpace, 2*time.Minute)
	t.Logf("NOSPACE raised: Ready=False %s %s after: %s", cond.Reason, time.Since(start).Round(100*time.Millisecond), cond.Message)
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	toReady := time.Since(start)
	reasons := stopWatch()

	h.mu.Lock()
	refused := h.refused
	h.mu.Unlock()
	if refused == 0 {
		t.Errorf("no put refused with NOSPACE while the alarm was raised (clients saw: %s)", h.failureSummary())
	}
	t.Logf("Ready reasons seen while the alarm was raised and after: %v", reasons)
	if reasons[string(metav1.ConditionFalse)+" "+etcdv1beta2.ReasonQuorumLost] > 0 {
		t.Errorf("the status said QuorumLost during the NOSPACE alarm (reasons seen: %v)", reasons)
	}
	checkMembersKept(t, c, e, "the NOSPACE alarm and its remedy", ids, pods, claims)
	if got := etcdRestarts(t, c, e); !maps.Equal(got, restarts) {
		t.Errorf("container restarts %v after the alarm, want %v: no member restarted", got, restarts)
	}
	cell.finish(t, "NOSPACE alarm raised, remedied by the operator", toReady)
}

// podVersions maps e's member pods to the version of their etcd image,
// and counts those not ready.
func podVersions(ctx context.Context, c client.Client, e *etcdv1beta2.EtcdCluster) (map[string]string, int, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(e.Namespace), client.MatchingLabels(etcdcluster.Selector(e.Name))); err != nil {
		return nil, 0, err
	}
	versions, notReady := map[string]string{}, 0
	for _, p := range pods.Items {
		for _, ct := range p.Spec.Containers {
			if ct.Name == etcdcluster.ContainerName {
				_, versions[p.Name], _ = strings.Cut(ct.Image, ":v")
			}
		}
		if !podReady(&p) {
			notReady++
		}
	}
	return versions, notReady, nil
}

// tryVersion sets e's spec.version to version once (again on a conflict)
// and returns the API server's answer.
func tryVersion(t *testing.T, c client.Client, e *etcdv1beta2.EtcdCluster, version string) error {
	t.Helper()
	for {
		got := &etcdv1beta2.EtcdCluster{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(e), got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Version = version
		err := c.Update(context.Background(), got)
		if !apierrors.IsConflict(err) {
			if err == nil {
				*e = *got
			}
			return err
		}
	}
}

// checkRefused checks that err is admission's refusal of spec.version,
// naming the field and what the rule goes by.
func checkRefused(t *testing.T, err error, version string, mentions ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("spec.version %s mid-upgrade: %v, want it refused as invalid", version, err)
		return
	}
	for _, m := range append([]string{"spec.version"}, mentions...) {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("the refusal of spec.version %s does not name %s: %v", version, m, err)
		}
	}
	t.Logf("spec.version %s mid-upgrade refused: %v", version, err)
}

// An upgrade from 3.6.15 to 3.6.16 whose spec.version is changed while
// the members roll. The local registry has 3.6.15, 3.6.16 and 3.7.2, so
// no later patch of a target a 3.6.15 cluster can move to: the change
// accepted mid-roll is 3.7.2, one step from status.currentVersion
// (3.6.15), and the roll goes on to it. A version the members cannot
// reach in one step (3.8.0) is refused by admission, with a message
// naming spec.version, both while the target is 3.6.16 and once it is
// 3.7.2: there, 3.8.0 is one minor after the old spec.version, and only
// the rule that goes by status.currentVersion refuses it. The roll ends
// with every member at 3.7.2, one member pod restarting at a time, the
// quorum kept throughout, and every acknowledged write kept, the history
// linearizable and every member with the same HashKV.
func TestEtcdFaultVersionChangedMidUpgradeRollsOnOrIsRefused(t *testing.T) {
	ctx := context.Background()
	cell := startEtcdCell(t, "midupgrade", etcdPreviousVersion)
	c, e := cell.c, cell.e
	const unreachable = "3.8.0"

	// The pods' images and how many member pods are not ready at once.
	var mu sync.Mutex
	maxNotReady, seen := 0, map[string]bool{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			if versions, notReady, err := podVersions(watchCtx, c, e); err == nil {
				mu.Lock()
				maxNotReady = max(maxNotReady, notReady)
				for name, v := range versions {
					seen[name+"@"+v] = true
				}
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// midRoll waits until some member pod runs from version's image and
	// some from another, and returns them.
	midRoll := func(version string) map[string]string {
		var versions map[string]string
		testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
			var err error
			if versions, _, err = podVersions(ctx, c, e); err != nil {
				return false, err.Error()
			}
			at := 0
			for _, v := range versions {
				if v == version {
					at++
				}
			}
			return at > 0 && at < len(versions), fmt.Sprintf("pod versions %v", versions)
		})
		return versions
	}

	setEtcdSpec(t, c, e, func(s *etcdv1beta2.EtcdClusterSpec) { s.Version = etcdVersion })
	t.Logf("upgrading to %s, mid-roll: pod versions %v", etcdVersion, midRoll(etcdVersion))
	checkRefused(t, tryVersion(t, c, e, unreachable), unreachable)

	// The target changed mid-roll to the next minor.
	start := time.Now()
	if err := tryVersion(t, c, e, etcdNextVersion); err != nil {
		t.Fatalf("spec.version %s mid-upgrade (status.currentVersion %s): %v, want it accepted", etcdNextVersion, e.Status.CurrentVersion, err)
	}
	versions, _, err := podVersions(ctx, c, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spec.version %s accepted with status.currentVersion %s, pod versions %v", etcdNextVersion, e.Status.CurrentVersion, versions)
	if !slices.Contains(slices.Collect(maps.Values(versions)), etcdPreviousVersion) {
		t.Errorf("pod versions %v when spec.version was changed, want some still at %s: the change was not made mid-roll", versions, etcdPreviousVersion)
	}
	t.Logf("upgrading to %s, mid-roll: pod versions %v", etcdNextVersion, midRoll(etcdNextVersion))
	if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
		t.Fatal(err)
	}
	if cur := e.Status.CurrentVersion; cur == etcdNextVersion {
		t.Errorf("status.currentVersion is already %s mid-roll", cur)
	}
	checkRefused(t, tryVersion(t, c, e, unreachable), unreachable, "status.currentVersion")

	waitEtcdReady(t, c, e, 3, etcdNextVersion, 6*time.Minute)
	toReady := time.Since(start)
	stopWatch()
	<-watched
	if e.Spec.Version != etcdNextVersion {
		t.Errorf("spec.version %s at the end, want %s", e.Spec.Version, etcdNextVersion)
	}
	versions, _, err = podVersions(ctx, c, e)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range versions {
		if v != etcdNextVersion {
			t.Errorf("pod %s at %s at the end, want %s", name, v, etcdNextVersion)
		}
	}
	mu.Lock()
	t.Logf("pod images seen: %v; at most %d member pod(s) not ready at once", slices.Sorted(maps.Keys(seen)), maxNotReady)
	if maxNotReady > 1 {
		t.Errorf("%d member pods were not ready at once, want one at a time", maxNotReady)
	}
	mu.Unlock()
	cell.finish(t, "spec.version changed mid-upgrade (3.6.15 -> 3.6.16, then 3.7.2)", toReady)
}

// etcd's CORRUPT alarm raised while clients write, as its corruption
// check raises it for a member whose data differs (through the Alarm call
// of etcd's maintenance API, as in the NOSPACE cell): etcd refuses every
// write, its health check fails and the member pods turn not ready. The
// status says Ready=False Corrupt, never Ready, while the alarm lasts; the
// operator removes, replaces and restarts nothing (which member's data is
// right is for a person to find). Disarmed, the cluster is Ready again;
// every acknowledged write is kept, the history is linearizable and every
// member ends with the same HashKV.
func TestEtcdFaultCorruptAlarmIsNotReadyAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	cell := startEtcdCell(t, "corrupt", etcdVersion)
	c, e := cell.c, cell.e
	ids := etcdMemberIDs(e)
	pods, claims, restarts := etcdPodUIDs(t, c, e), etcdClaimUIDs(t, c, e), etcdRestarts(t, c, e)
	// Made while the pods are ready: it keeps their addresses.
	admin := etcdClientOf(t, c, e)
	id, _ := strconv.ParseUint(ids[e.Status.Leader], 16, 64)

	rc, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := setAlarm(rc, admin, id, pb.AlarmType_CORRUPT, true)
	cancel()
	if err != nil {
		t.Fatalf("raise the CORRUPT alarm: %v", err)
	}
	start := time.Now()
	cond := waitCondition(t, c, e, func() []metav1.Condition { return e.Status.Conditions },
		conditions.Ready, metav1.ConditionFalse, etcdv1beta2.ReasonCorrupt, 2*time.Minute)
	t.Logf("CORRUPT raised: Ready=False %s %s after: %s", cond.Reason, time.Since(start).Round(100*time.Millisecond), cond.Message)
	// The status stays Corrupt while the alarm lasts, whatever the pods'
	// readiness does meanwhile.
	var seen []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err == nil {
			if r := findCondition(e.Status.Conditions, conditions.Ready); r != nil && r.Reason != etcdv1beta2.ReasonCorrupt {
				seen = append(seen, string(r.Status)+" "+r.Reason)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(seen) > 0 {
		t.Errorf("Ready left Corrupt while the alarm was raised: %v", seen)
	}
	checkMembersKept(t, c, e, "the CORRUPT alarm", ids, pods, claims)
	if got := etcdRestarts(t, c, e); !maps.Equal(got, restarts) {
		t.Errorf("container restarts %v during the alarm, want %v: no member restarted", got, restarts)
	}

	start = time.Now()
	rc, cancel = context.WithTimeout(ctx, 10*time.Second)
	err = setAlarm(rc, admin, id, pb.AlarmType_CORRUPT, false)
	cancel()
	if err != nil {
		t.Fatalf("disarm the CORRUPT alarm: %v", err)
	}
	waitEtcdReady(t, c, e, 3, etcdVersion, 3*time.Minute)
	toReady := time.Since(start)
	checkMembersKept(t, c, e, "the CORRUPT alarm and its disarm", ids, pods, claims)
	if !strings.Contains(cell.h.failureSummary(), "corrupt") {
		t.Errorf("no write refused as corrupt while the alarm was raised (clients saw: %s)", cell.h.failureSummary())
	}
	cell.finish(t, "CORRUPT alarm raised, then disarmed", toReady)
}
