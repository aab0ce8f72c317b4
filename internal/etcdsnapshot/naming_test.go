package etcdsnapshot

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBackupName round-trips both forms of a backup's name and refuses
// other names.
func TestBackupName(t *testing.T) {
	at := time.Date(2026, 11, 26, 13, 4, 5, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name      string
		clusterID uint64
		want      string
	}{
		{"with a cluster ID", 0x1c2d3e4f5a6b7c8d, "a/b_c1c2d3e4f5a6b7c8d_v42_20261126-120405"},
		{"with a short cluster ID", 0xa, "a/b_ca_v42_20261126-120405"},
		{"without one (unknown)", 0, "a/b_v42_20261126-120405"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := BackupName("a/b", tt.clusterID, 42, at)
			if name != tt.want {
				t.Fatalf("BackupName = %q, want %q", name, tt.want)
			}
			want := BackupInfo{ClusterID: tt.clusterID, Revision: 42, Time: at.UTC()}
			if got, ok := ParseBackupName("a/b", name); !ok || got != want {
				t.Errorf("ParseBackupName = %+v %v, want %+v", got, ok, want)
			}
			if got, ok := ParseExactName(name); !ok || got != want {
				t.Errorf("ParseExactName = %+v %v, want %+v", got, ok, want)
			}
		})
	}
	for _, bad := range []string{
		"a/b_v42", "a/bc_v42_20261126-120405", "a/b_vx_20261126-120405", "a/b_v42_2026", "a/b_v042_20261126-120405",
		"a/b_c_v42_20261126-120405", "a/b_c0_v42_20261126-120405", "a/b_c0a_v42_20261126-120405", "a/b_cA_v42_20261126-120405",
		"a/b_cx_v42_20261126-120405", "a/b_ca_42_20261126-120405", "a/b_ca_v42", "a/b_ca_cb_v42_20261126-120405",
	} {
		if info, ok := ParseBackupName("a/b", bad); ok {
			t.Errorf("ParseBackupName accepted %q as %+v", bad, info)
		}
	}
}

// TestParseExactNameOfAPrefixWithUnderscores reads the revision of an
// exact backup whose prefix holds "_c" and "_v" itself. (An old-form name
// whose prefix ends in "_c" and hex digits reads as the new form: only its
// revision, which both forms agree on, is used of an exact name.)
func TestParseExactNameOfAPrefixWithUnderscores(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, prefix := range []string{"/backup/my_cluster", "/backup/my_v1", "s3://b/x_c"} {
		for _, id := range []uint64{0, 0xbeef} {
			name := BackupName(prefix, id, 7, at)
			if got, ok := ParseExactName(name); !ok || got != (BackupInfo{ClusterID: id, Revision: 7, Time: at}) {
				t.Errorf("ParseExactName(%q) = %+v %v", name, got, ok)
			}
		}
	}
	if _, ok := ParseExactName("/backup/snapshot.db"); ok {
		t.Error("ParseExactName accepted a name that is no backup's")
	}
}

// day is a time on a fixed day, hour h.
func day(h int) time.Time { return time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC) }

// names are backup names under p of (cluster ID, revision, hour).
func names(entries ...[3]int) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, BackupName("p", uint64(e[0]), int64(e[1]), day(e[2])))
	}
	return out
}

// TestChooseBackup picks, under a prefix, the highest revision of the
// cluster that wrote the most recent backup, and refuses to pick when two
// clusters wrote at the same time.
func TestChooseBackup(t *testing.T) {
	tests := []struct {
		name    string
		backups []string
		want    string // the chosen name; empty for TimelinesInterleaved
		clash   []string
	}{
		{"one cluster: its highest revision",
			names([3]int{0xa, 10, 1}, [3]int{0xa, 30, 3}, [3]int{0xa, 20, 2}), BackupName("p", 0xa, 30, day(3)), nil},
		{"one cluster: the highest revision even when it is not the latest",
			names([3]int{0xa, 30, 1}, [3]int{0xa, 20, 2}), BackupName("p", 0xa, 30, day(1)), nil},
		{"one cluster: a tie on revision goes to the later",
			names([3]int{0xa, 30, 1}, [3]int{0xa, 30, 2}), BackupName("p", 0xa, 30, day(2)), nil},
		{"a cluster made again under the same name starts at a lower revision",
			names([3]int{0xa, 9000, 1}, [3]int{0xa, 9500, 2}, [3]int{0xb, 5, 3}, [3]int{0xb, 7, 4}), BackupName("p", 0xb, 7, day(4)), nil},
		{"a cluster restored from an older snapshot continues below the abandoned one",
			names([3]int{0xa, 100, 1}, [3]int{0xa, 200, 2}, [3]int{0xb, 101, 3}), BackupName("p", 0xb, 101, day(3)), nil},
		{"backups without a cluster ID are one cluster of their own, older here",
			names([3]int{0, 9000, 1}, [3]int{0, 9100, 2}, [3]int{0xb, 3, 3}), BackupName("p", 0xb, 3, day(3)), nil},
		{"backups without a cluster ID, newer here",
			names([3]int{0xb, 9000, 1}, [3]int{0, 3, 2}), BackupName("p", 0, 3, day(2)), nil},
		{"three clusters one after the other",
			names([3]int{0xa, 50, 1}, [3]int{0xb, 60, 2}, [3]int{0xc, 2, 3}), BackupName("p", 0xc, 2, day(3)), nil},
		{"one backup on the other's last hour is not within its span",
			names([3]int{0xa, 50, 1}, [3]int{0xa, 60, 2}, [3]int{0xb, 2, 2}, [3]int{0xb, 3, 3}), BackupName("p", 0xb, 3, day(3)), nil},
		{"two clusters that interleave once older does not stop the newest",
			names([3]int{0xa, 1, 1}, [3]int{0xb, 1, 2}, [3]int{0xa, 2, 3}, [3]int{0xc, 1, 4}), BackupName("p", 0xc, 1, day(4)), nil},
		{"interleaved: the older cluster wrote within the newer one's span",
			names([3]int{0xb, 5, 1}, [3]int{0xa, 900, 2}, [3]int{0xb, 7, 3}), "", []string{"a", "b"}},
		{"interleaved: the newer cluster wrote within the older one's span",
			names([3]int{0xa, 900, 1}, [3]int{0xb, 5, 2}, [3]int{0xa, 901, 3}, [3]int{0xb, 6, 4}), "", []string{"a", "b"}},
		{"interleaved with backups without a cluster ID",
			names([3]int{0, 900, 1}, [3]int{0xb, 5, 2}, [3]int{0, 901, 3}), "", []string{"unknown", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseBackup("/backup/p", backupsUnder("p", tt.backups))
			if tt.want != "" {
				if err != nil || got.Name != tt.want {
					t.Fatalf("chose %q (%v), want %q", got.Name, err, tt.want)
				}
				return
			}
			if ReasonOf(err) != ReasonTimelinesInterleaved {
				t.Fatalf("chose %q (%v), want TimelinesInterleaved", got.Name, err)
			}
			for _, want := range append(tt.clash, "/backup/p", "name an exact snapshot") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestPruneOrder lists the backups of a prefix oldest first by the time in
// their names: the backups of a cluster made again, whose revisions are
// lower, are the newest and go last.
func TestPruneOrder(t *testing.T) {
	tests := []struct {
		name    string
		backups []string
		want    []string
	}{
		{"one cluster", names([3]int{0xa, 20, 2}, [3]int{0xa, 10, 1}, [3]int{0xa, 30, 3}),
			names([3]int{0xa, 10, 1}, [3]int{0xa, 20, 2}, [3]int{0xa, 30, 3})},
		{"a cluster made again after another", names([3]int{0xb, 2, 3}, [3]int{0xa, 9000, 1}, [3]int{0xb, 1, 2}, [3]int{0xa, 9100, 2}),
			names([3]int{0xa, 9000, 1}, [3]int{0xb, 1, 2}, [3]int{0xa, 9100, 2}, [3]int{0xb, 2, 3})},
		{"backups without a cluster ID before those with one", names([3]int{0xb, 1, 3}, [3]int{0, 500, 1}, [3]int{0, 600, 2}),
			names([3]int{0, 500, 1}, [3]int{0, 600, 2}, [3]int{0xb, 1, 3})},
		{"names of other prefixes are left out", append(names([3]int{0xa, 1, 1}), "p-other_v1_20260301-000000", "p_v1_bad"),
			names([3]int{0xa, 1, 1})},
	}
	for _, tt := range tests {
		if got := oldestFirst(backupsUnder("p", tt.backups)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
