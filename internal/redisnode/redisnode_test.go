package redisnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/google/go-cmp/cmp"
)

func TestParseInfo(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Info
	}{
		{
			name: "should read a primary, its history and its keys in every database",
			text: "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_replid:abc\r\nmaster_repl_offset:1234\r\n\r\n# Keyspace\r\ndb0:keys=10,expires=0,avg_ttl=0\r\ndb3:keys=5,expires=1,avg_ttl=7\r\n",
			want: Info{SecondOffset: -1, Primary: true, ReplID: "abc", Offset: 1234, Keys: 15},
		},
		{
			name: "should read the memory, clients, commands and persistence a node reports",
			text: "# Clients\r\nconnected_clients:12\r\n# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\nmaxmemory:805306368\r\n" +
				"# Persistence\r\nrdb_last_save_time:1764417600\r\nrdb_last_bgsave_status:err\r\naof_enabled:1\r\naof_last_write_status:ok\r\n" +
				"# Stats\r\ntotal_commands_processed:987654\r\n# Replication\r\nrole:master\r\nmaster_repl_offset:7\r\n",
			want: Info{SecondOffset: -1, Primary: true, Offset: 7, Usage: Usage{UsedMemory: 1048576, MaxMemory: 805306368, Clients: 12, Commands: 987654,
				LastSave: time.Unix(1764417600, 0), SaveFailed: true, AOF: true}},
		},
		{
			name: "should read the operations per second a node sampled",
			text: "# Stats\r\ntotal_commands_processed:42\r\ninstantaneous_ops_per_sec:1530\r\n# Replication\r\nrole:slave\r\nmaster_link_status:down\r\nmaster_repl_offset:0\r\n",
			want: Info{SecondOffset: -1, LastIO: -1, Usage: Usage{Commands: 42, OpsPerSec: 1530}},
		},
		{
			name: "should read how long ago each online replica of a primary acknowledged the stream",
			text: "role:master\r\nconnected_slaves:3\r\nmin_slaves_good_slaves:1\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=99,lag=0\r\n" +
				"slave1:ip=10.0.0.3,port=6379,state=online,offset=80,lag=21\r\nslave2:ip=10.0.0.4,port=6379,state=wait_bgsave,offset=0,lag=0\r\nmaster_repl_offset:99\r\n",
			want: Info{SecondOffset: -1, Primary: true, Offset: 99, ReplicaLag: map[string]time.Duration{"10.0.0.2": 0, "10.0.0.3": 21 * time.Second},
				ReplicaPorts: map[string]int{"10.0.0.2": 6379, "10.0.0.3": 6379, "10.0.0.4": 6379}},
		},
		{
			name: "should read where a primary's failover stands, and the port each replica announced (0 for one that serves TLS alone and reaches it in plain text)",
			text: "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=10.0.0.2,port=0,state=online,offset=99,lag=0\r\nslave1:ip=10.0.0.3,port=6379,state=online,offset=99,lag=1\r\n" +
				"master_failover_state:waiting-for-sync\r\nmaster_replid:abc\r\nmaster_repl_offset:99\r\n",
			want: Info{SecondOffset: -1, Primary: true, ReplID: "abc", Offset: 99, FailoverState: FailoverWaiting,
				ReplicaLag: map[string]time.Duration{"10.0.0.2": 0, "10.0.0.3": time.Second}, ReplicaPorts: map[string]int{"10.0.0.2": 0, "10.0.0.3": 6379}},
		},
		{
			name: "should read a primary that made itself a replica of the node it fails over to",
			text: "role:slave\r\nmaster_host:10.0.0.2\r\nmaster_port:6379\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\n" +
				"master_failover_state:failover-in-progress\r\nmaster_replid:abc\r\nmaster_repl_offset:99\r\n",
			want: Info{SecondOffset: -1, ReplID: "abc", Offset: 99, PrimaryHost: "10.0.0.2", LastIO: -1, FailoverState: FailoverInProgress},
		},
		{
			name: "should read a replica streaming from its primary",
			text: "role:slave\r\nmaster_host:r-0.r-nodes\r\nmaster_port:6379\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\nmaster_replid:abc\r\nmaster_repl_offset:1200\r\n",
			want: Info{SecondOffset: -1, ReplID: "abc", Offset: 1200, PrimaryHost: "r-0.r-nodes", LinkUp: true, LastIO: time.Second},
		},
		{
			name: "should read a replica whose link is down as not up, with no last contact",
			text: "role:slave\r\nmaster_host:r-0.r-nodes\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\nmaster_replid:def\r\nmaster_repl_offset:0\r\n",
			want: Info{SecondOffset: -1, ReplID: "def", PrimaryHost: "r-0.r-nodes", LastIO: -1},
		},
		{
			name: "should read the history a promoted primary continued, and how far",
			text: "role:master\r\nmaster_replid:new\r\nmaster_replid2:old\r\nmaster_repl_offset:5000\r\nsecond_repl_offset:4001\r\n",
			want: Info{Primary: true, ReplID: "new", Offset: 5000, ReplID2: "old", SecondOffset: 4001},
		},
		{
			name: "should read a replica in the middle of a full sync as not up",
			text: "role:slave\r\nmaster_host:r-1.r-nodes\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:0\r\nmaster_sync_in_progress:1\r\n",
			want: Info{SecondOffset: -1, PrimaryHost: "r-1.r-nodes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseInfo(tt.text)); diff != "" {
				t.Errorf("ParseInfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailoverOutcome(t *testing.T) {
	waiting := Info{Primary: true, FailoverState: FailoverWaiting}
	tests := []struct {
		name    string
		answers []any
		// want is the error wanted (nil for none); wantText, a part of
		// its text when it wraps none.
		want     error
		wantText string
	}{
		{
			name:    "should end once the primary made itself a replica, even before the replica took over",
			answers: []any{waiting, waiting, Info{FailoverState: FailoverInProgress}},
		},
		{
			name:    "should go on asking a node that does not answer for a moment",
			answers: []any{waiting, errors.New("i/o timeout"), Info{FailoverState: FailoverNone}},
		},
		{
			name:    "should say the failover was aborted when the node is a primary again with no failover under way",
			answers: []any{waiting, waiting, Info{Primary: true, FailoverState: FailoverNone}},
			want:    ErrFailoverAborted,
		},
		{
			name:     "should give up when the failover does not end in time, saying where it stands",
			answers:  []any{waiting},
			wantText: "did not end in time: the failover is still waiting-for-sync",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			info := func(context.Context) (Info, error) {
				a := tt.answers[min(asked, len(tt.answers)-1)]
				asked++
				if err, ok := a.(error); ok {
					return Info{}, err
				}
				return a.(Info), nil
			}
			err := failoverOutcome(context.Background(), info, time.Now().Add(50*time.Millisecond), time.Millisecond)
			switch {
			case tt.wantText != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantText) {
					t.Errorf("error %v, want one saying %q", err, tt.wantText)
				}
			case !errors.Is(err, tt.want) || (tt.want == nil && err != nil):
				t.Errorf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestIsBusyTellsRedisBusyAnswerFromOtherErrors(t *testing.T) {
	for err, want := range map[error]bool{
		redis.Error("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."): true,
		fmt.Errorf("info: %w", redis.Error("BUSY Redis is busy running a script.")):                           true,
		redis.Error("BUSYKEY Target key name already exists."):                                                false,
		errors.New("BUSY but not from Redis"):                                                                 false,
		nil:                                                                                                   false,
	} {
		if got := IsBusy(err); got != want {
			t.Errorf("IsBusy(%v) = %v, want %v", err, got, want)
		}
	}
}
