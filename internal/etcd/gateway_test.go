package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/test/cluster"
)

// TestGatewayAgainstRealEtcd makes every call against a real etcd, the
// control plane's own binary: a single member, a learner added to it
// through an endpoint list whose first member cannot be reached, refused
// its promotion (ErrNotReady) and the leadership, then removed; an alarm
// raised is read as an alarm.
func TestGatewayAgainstRealEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	down := "http://127.0.0.1:" + freePort(t)
	cli, err := etcd.Dial(ctx, []string{down, endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()

	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if st.ClusterID == 0 || st.MemberID == 0 || st.Leader != st.MemberID || st.Version == "" || len(st.Errors)+len(st.Alarms) != 0 {
		t.Fatalf("status %+v: want the single member, its own leader, with its version and no error", st)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list.ClusterID != st.ClusterID || list.MemberID != st.MemberID || len(list.Members) != 1 ||
		list.Members[0].ID != st.MemberID || list.Members[0].Name != "m0" || list.Members[0].IsLearner || len(list.Members[0].PeerURLs) != 1 ||
		!slices.Equal(list.Members[0].ClientURLs, []string{endpoint}) {
		t.Fatalf("member list %+v: want m0 alone, ID %x, in cluster %x, advertising %s", list, st.MemberID, st.ClusterID, endpoint)
	}

	peer := "http://127.0.0.1:" + freePort(t)
	learner, err := cli.AddMember(ctx, peer, true)
	if err != nil {
		t.Fatal(err)
	}
	if learner.ID == 0 || !learner.IsLearner || !slices.Equal(learner.PeerURLs, []string{peer}) {
		t.Fatalf("added %+v: want a learner with an ID at %s", learner, peer)
	}
	// The learner never starts: it is not in sync with the leader.
	if err := cli.PromoteMember(ctx, learner.ID); !errors.Is(err, etcd.ErrNotReady) {
		t.Fatalf("promoting the learner: got %v, want %v", err, etcd.ErrNotReady)
	}
	if list, err = cli.MemberList(ctx); err != nil || len(list.Members) != 2 {
		t.Fatalf("members %+v, %v: want m0 and the learner", list, err)
	}
	for _, m := range list.Members {
		if m.ID == learner.ID && (!m.IsLearner || m.Name != "" || !slices.Equal(m.PeerURLs, []string{peer})) {
			t.Errorf("the learner is listed as %+v: want a learner not started, at %s", m, peer)
		}
	}
	// A member's peer URLs change (the move of a member to TLS).
	moved := "https" + strings.TrimPrefix(peer, "http")
	if err := cli.UpdateMember(ctx, learner.ID, []string{moved}); err != nil {
		t.Fatal(err)
	}
	if list, err = cli.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.ID == learner.ID && !slices.Equal(m.PeerURLs, []string{moved}) {
			t.Errorf("the learner's peer URLs after the update: %v, want %s", m.PeerURLs, moved)
		}
	}
	// Only a voting member takes the leadership: a refusal, not ErrNotReady.
	var refusal *etcd.Refusal
	if err := cli.MoveLeader(ctx, learner.ID); !errors.As(err, &refusal) || errors.Is(err, etcd.ErrNotReady) {
		t.Errorf("moving the leadership to the learner: got %v, want etcd's refusal", err)
	}
	if err := cli.RemoveMember(ctx, learner.ID); err != nil {
		t.Fatal(err)
	}
	if list, err = cli.MemberList(ctx); err != nil || len(list.Members) != 1 {
		t.Fatalf("members %+v, %v: want m0 alone", list, err)
	}

	raiseAlarm(t, endpoint, st.MemberID, "NOSPACE")
	if st, err = cli.Status(ctx, endpoint); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Alarms, []etcd.Alarm{{Name: "NOSPACE", MemberID: st.MemberID}}) || len(st.Errors) != 0 {
		t.Errorf("status %+v: want the NOSPACE alarm of member %d and no other error", st, st.MemberID)
	}
	// What frees the space: a compaction (again: no error), a
	// defragmentation of the member, then the alarm disarmed.
	if st.Revision < 1 || st.DBSize <= 0 || st.DBSizeInUse <= 0 || st.DBSizeInUse > st.DBSize {
		t.Errorf("status %+v: want a revision and the database's sizes", st)
	}
	if err := cli.Compact(ctx, st.Revision); err != nil {
		t.Fatal(err)
	}
	if err := cli.Compact(ctx, st.Revision); err != nil {
		t.Errorf("compacting to a revision compacted already: %v", err)
	}
	if err := cli.Defragment(ctx, endpoint); err != nil {
		t.Fatal(err)
	}
	if err := cli.AlarmDisarm(ctx, st.Alarms[0]); err != nil {
		t.Fatal(err)
	}
	if st, err = cli.Status(ctx, endpoint); err != nil || len(st.Alarms) != 0 {
		t.Errorf("status %+v, %v after the alarm was disarmed: want no alarm", st, err)
	}
}

// TestGatewayNoMemberAnswers: a call through members none of which can be
// reached fails.
func TestGatewayNoMemberAnswers(t *testing.T) {
	if _, err := etcd.Dial(t.Context(), nil); err == nil {
		t.Error("no endpoint: want an error")
	}
	down := "http://127.0.0.1:" + freePort(t)
	cli, err := etcd.Dial(t.Context(), []string{down, down})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.MemberList(t.Context()); err == nil {
		t.Error("no member answers: want an error")
	}
}

// raiseAlarm raises an alarm of the member id, as etcd does when its
// database is full (NOSPACE).
func raiseAlarm(t *testing.T, endpoint string, id uint64, alarm string) {
	t.Helper()
	body := fmt.Sprintf(`{"action":"ACTIVATE","memberID":"%d","alarm":%q}`, id, alarm)
	resp, err := http.Post(endpoint+"/v3/maintenance/alarm", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("raising %s: %s", alarm, resp.Status)
	}
}

// startEtcd runs a single etcd member in a temporary folder and returns
// its client URL once it has a leader.
func startEtcd(t *testing.T) string {
	t.Helper()
	return startEtcdWith(t, "http", etcd.Dial)
}

// startEtcdWith is startEtcd with the client URL of scheme, reached
// through dial, and further flags.
func startEtcdWith(t *testing.T, scheme string, dial etcd.Dialer, flags ...string) string {
	t.Helper()
	dir, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run `make controlplane` first", err)
	}
	client, peer := scheme+"://127.0.0.1:"+freePort(t), "http://127.0.0.1:"+freePort(t)
	cmd := exec.Command(bin, append([]string{"--name=m0", "--data-dir=" + t.TempDir(),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=m0=" + peer, "--log-level=error"}, flags...)...)
	logFile := filepath.Join(t.TempDir(), "etcd.log")
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	cli, err := dial(context.Background(), []string{client})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, client)
		cancel()
		if err == nil && st.Leader != 0 {
			return client
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logFile)
			t.Fatalf("etcd did not answer: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
