package backuprun

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// oldEtcdResult and oldRedisResult are the results as the tools wrote them
// before Report: one flat struct each. A message they wrote must still
// parse to the same values.
type oldEtcdResult struct {
	Key             string    `json:"key,omitempty"`
	Revision        int64     `json:"revision,omitempty"`
	EtcdVersion     string    `json:"etcdVersion,omitempty"`
	Size            int64     `json:"size,omitempty"`
	TakenAt         time.Time `json:"takenAt,omitzero"`
	Member          string    `json:"member,omitempty"`
	AlreadyRestored bool      `json:"alreadyRestored,omitempty"`
	Skipped         bool      `json:"skipped,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	Error           string    `json:"error,omitempty"`
}

type oldRedisResult struct {
	Key             string    `json:"key,omitempty"`
	Node            string    `json:"node,omitempty"`
	Role            string    `json:"role,omitempty"`
	Offset          int64     `json:"offset,omitempty"`
	ReplicationID   string    `json:"replicationID,omitempty"`
	RedisVersion    string    `json:"redisVersion,omitempty"`
	Keys            int64     `json:"keys,omitempty"`
	Size            int64     `json:"size,omitempty"`
	TakenAt         time.Time `json:"takenAt,omitzero"`
	AlreadyRestored bool      `json:"alreadyRestored,omitempty"`
	Skipped         bool      `json:"skipped,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	Error           string    `json:"error,omitempty"`
}

func TestAnOldMessageParsesToTheSameValues(t *testing.T) {
	taken := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	etcd := func(m string) (any, error) { return ParseEtcd(m) }
	redis := func(m string) (any, error) { return ParseRedis(m) }
	tests := []struct {
		name string
		// message is what the tool wrote: old, as JSON.
		message string
		old     any
		parse   func(string) (any, error)
		want    any
	}{
		{"an etcd save", `{"key":"s3://b/etcd_v42_x","revision":42,"etcdVersion":"3.6.16","size":20480,"takenAt":"2026-11-26T12:00:00Z","member":"example-1"}`,
			oldEtcdResult{Key: "s3://b/etcd_v42_x", Revision: 42, EtcdVersion: "3.6.16", Size: 20480, TakenAt: taken, Member: "example-1"}, etcd,
			EtcdResult{Report: Report{Key: "s3://b/etcd_v42_x", Size: 20480, TakenAt: taken}, Revision: 42, EtcdVersion: "3.6.16", Member: "example-1"}},
		{"an etcd restore", `{"key":"/backup/etcd_v7_x","revision":7,"size":3}`, oldEtcdResult{Key: "/backup/etcd_v7_x", Revision: 7, Size: 3}, etcd,
			EtcdResult{Report: Report{Key: "/backup/etcd_v7_x", Size: 3}, Revision: 7}},
		{"an etcd restore that found a member", `{"alreadyRestored":true}`, oldEtcdResult{AlreadyRestored: true}, etcd, EtcdResult{Report: Report{AlreadyRestored: true}}},
		{"an etcd restore in another pod", `{"skipped":true}`, oldEtcdResult{Skipped: true}, etcd, EtcdResult{Report: Report{Skipped: true}}},
		{"an etcd failure", `{"reason":"NoLeader","error":"no member had a leader"}`, oldEtcdResult{Reason: "NoLeader", Error: "no member had a leader"}, etcd,
			EtcdResult{Report: Report{Reason: "NoLeader", Error: "no member had a leader"}}},
		{"a Redis save",
			`{"key":"s3://b/r_x_o4242.rdb","node":"r-2","role":"replica","offset":4242,"replicationID":"8f1c","redisVersion":"7.4.2","keys":9,"size":512,"takenAt":"2026-11-26T12:00:00Z"}`,
			oldRedisResult{Key: "s3://b/r_x_o4242.rdb", Node: "r-2", Role: "replica", Offset: 4242, ReplicationID: "8f1c", RedisVersion: "7.4.2", Keys: 9, Size: 512, TakenAt: taken}, redis,
			RedisResult{Report: Report{Key: "s3://b/r_x_o4242.rdb", Size: 512, TakenAt: taken}, Node: "r-2", Role: "replica", Offset: 4242, ReplicationID: "8f1c", RedisVersion: "7.4.2", Keys: 9}},
		{"a Redis restore that found data", `{"alreadyRestored":true}`, oldRedisResult{AlreadyRestored: true}, redis, RedisResult{Report: Report{AlreadyRestored: true}}},
		{"a Redis restore in another pod", `{"skipped":true}`, oldRedisResult{Skipped: true}, redis, RedisResult{Report: Report{Skipped: true}}},
		{"a Redis failure", `{"reason":"AccessDenied","error":"the credentials were refused"}`, oldRedisResult{Reason: "AccessDenied", Error: "the credentials were refused"}, redis,
			RedisResult{Report: Report{Reason: "AccessDenied", Error: "the credentials were refused"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if old, err := json.Marshal(tt.old); err != nil || string(old) != tt.message {
				t.Fatalf("the old tool wrote %s, %v; want %s", old, err, tt.message)
			}
			got, err := tt.parse(tt.message + "\n")
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%s parsed to %+v, %v; want %+v", tt.message, got, err, tt.want)
			}
			// What the tool writes now holds the same keys and values.
			now, err := json.Marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			var was, is map[string]any
			if err := json.Unmarshal([]byte(tt.message), &was); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(now, &is); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(was, is) {
				t.Errorf("the tool writes %s, it wrote %s", now, tt.message)
			}
		})
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseEtcd(" \n"); err == nil || err.Error() != "the snapshot tool said nothing" {
		t.Errorf("an empty etcd message: %v", err)
	}
	if _, err := ParseRedis(""); err == nil || err.Error() != "the Redis snapshot tool said nothing" {
		t.Errorf("an empty Redis message: %v", err)
	}
	if r, err := ParseEtcd(`{"key":"k","revision":"not a number"}`); err == nil || r != (EtcdResult{}) {
		t.Errorf("a message that does not parse gave %+v, %v", r, err)
	}
}

func TestFailure(t *testing.T) {
	tests := []struct {
		name                string
		run                 EtcdRun
		wantReason, wantMsg string
	}{
		{"the tool's reason and words", EtcdRun{Job: "j", Done: true, Result: &EtcdResult{Report: Report{Reason: "TargetFull", Error: "no space left"}}},
			"TargetFull", "Backup Job j failed: no space left"},
		{"the tool's reason alone", EtcdRun{Job: "j", Done: true, Result: &EtcdResult{Report: Report{Reason: "Timeout"}}}, "Timeout", "Backup Job j failed: Timeout"},
		{"the tool's words alone", EtcdRun{Job: "j", Done: true, Result: &EtcdResult{Report: Report{Error: "boom"}}}, "BackupFailed", "Backup Job j failed: boom"},
		{"the Job's condition", EtcdRun{Job: "j", Done: true, Message: "Job j failed: DeadlineExceeded: too long"}, "BackupFailed", "Job j failed: DeadlineExceeded: too long"},
		{"no word at all", EtcdRun{Job: "j", Done: true, Result: &EtcdResult{}}, "BackupFailed", "Backup Job j failed"},
	}
	for _, tt := range tests {
		if f := Failure(tt.run); f.Reason != tt.wantReason || f.Message != tt.wantMsg {
			t.Errorf("%s: %s %q, want %s %q", tt.name, f.Reason, f.Message, tt.wantReason, tt.wantMsg)
		}
	}
}
