package redissnapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/app-operator/app-operator/internal/resources/redisbackup"
)

// TestReadLineage lays out data folders as Redis leaves them and checks
// what the lineage container reports of each.
func TestReadLineage(t *testing.T) {
	replID := strings.Repeat("ab", 20)
	noPosition := sealRDB([]byte("REDIS0010"))
	// file is a file of the folder, written at the given second.
	type file struct {
		name string
		data []byte
		at   int
	}
	tests := []struct {
		name  string
		files []file
		want  redisbackup.Lineage
		// why is what an unknown position's reason must contain.
		why string
	}{
		{name: "an empty folder holds no data", want: redisbackup.Lineage{Known: true, Empty: true}},
		{name: "an append-only file of empty files holds no data",
			files: []file{{name: "appendonlydir/appendonly.aof.1.base.rdb", at: 1}, {name: "appendonlydir/appendonly.aof.1.incr.aof", at: 1},
				{name: "appendonlydir/appendonly.aof.manifest", data: []byte("file x"), at: 1}},
			want: redisbackup.Lineage{Known: true, Empty: true}},
		{name: "the RDB written on SIGTERM, after the last write, says how far the data got",
			files: []file{{name: "appendonlydir/appendonly.aof.1.incr.aof", data: []byte("*1\r\n"), at: 5}, {name: "dump.rdb", data: testRDB(1234, 1), at: 6}},
			want:  redisbackup.Lineage{Known: true, ReplicationID: replID, Offset: 1234}},
		{name: "writes after the last RDB (the node was killed): not known",
			files: []file{{name: "dump.rdb", data: testRDB(1234, 1), at: 5}, {name: "appendonlydir/appendonly.aof.1.incr.aof", data: []byte("*1\r\n"), at: 6}},
			why:   "after the last RDB"},
		{name: "an append-only file and no RDB: not known",
			files: []file{{name: "appendonlydir/appendonly.aof.1.incr.aof", data: []byte("*1\r\n"), at: 6}},
			why:   "no RDB"},
		{name: "an RDB of a node in no replication: not known",
			files: []file{{name: "dump.rdb", data: noPosition, at: 6}},
			why:   "records no replication position"},
		{name: "a restore's layout: the base's position, while nothing follows it",
			files: []file{{name: "appendonlydir/appendonly.aof.1.base.rdb", data: testRDB(99, 2), at: 5},
				{name: "appendonlydir/appendonly.aof.manifest", data: []byte(manifestText), at: 5}},
			want: redisbackup.Lineage{Known: true, ReplicationID: replID, Offset: 99}},
		{name: "a restore's layout with writes after it: not known",
			files: []file{{name: "appendonlydir/appendonly.aof.1.base.rdb", data: testRDB(99, 2), at: 5},
				{name: "appendonlydir/appendonly.aof.1.incr.aof", data: []byte("*1\r\n"), at: 6}},
			why: "no RDB"},
		{name: "a damaged RDB: not known",
			files: []file{{name: "dump.rdb", data: []byte("REDIS00"), at: 6}},
			why:   "damaged"},
	}
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				path := filepath.Join(dir, f.name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f.data, 0o644); err != nil {
					t.Fatal(err)
				}
				at := epoch.Add(time.Duration(f.at) * time.Second)
				if err := os.Chtimes(path, at, at); err != nil {
					t.Fatal(err)
				}
			}
			got := ReadLineage(dir)
			if tt.why != "" {
				if got.Known || !strings.Contains(got.Why, tt.why) {
					t.Fatalf("got %+v, want not known because %q", got, tt.why)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lineage (-want +got):\n%s", diff)
			}
		})
	}
}
