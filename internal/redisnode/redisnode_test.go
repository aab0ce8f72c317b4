package redisnode

import (
	"errors"
	"fmt"
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
			want: Info{Primary: true, ReplID: "abc", Offset: 1234, Keys: 15},
		},
		{
			name: "should read how long ago each online replica of a primary acknowledged the stream",
			text: "role:master\r\nconnected_slaves:3\r\nmin_slaves_good_slaves:1\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=99,lag=0\r\n" +
				"slave1:ip=10.0.0.3,port=6379,state=online,offset=80,lag=21\r\nslave2:ip=10.0.0.4,port=6379,state=wait_bgsave,offset=0,lag=0\r\nmaster_repl_offset:99\r\n",
			want: Info{Primary: true, Offset: 99, ReplicaLag: map[string]time.Duration{"10.0.0.2": 0, "10.0.0.3": 21 * time.Second}},
		},
		{
			name: "should read a replica streaming from its primary",
			text: "role:slave\r\nmaster_host:r-0.r-nodes\r\nmaster_port:6379\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:1\r\nmaster_sync_in_progress:0\r\nmaster_replid:abc\r\nmaster_repl_offset:1200\r\n",
			want: Info{ReplID: "abc", Offset: 1200, PrimaryHost: "r-0.r-nodes", LinkUp: true, LastIO: time.Second},
		},
		{
			name: "should read a replica whose link is down as not up, with no last contact",
			text: "role:slave\r\nmaster_host:r-0.r-nodes\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\nmaster_replid:def\r\nmaster_repl_offset:0\r\n",
			want: Info{ReplID: "def", PrimaryHost: "r-0.r-nodes", LastIO: -1},
		},
		{
			name: "should read a replica in the middle of a full sync as not up",
			text: "role:slave\r\nmaster_host:r-1.r-nodes\r\nmaster_link_status:up\r\nmaster_last_io_seconds_ago:0\r\nmaster_sync_in_progress:1\r\n",
			want: Info{PrimaryHost: "r-1.r-nodes"},
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
