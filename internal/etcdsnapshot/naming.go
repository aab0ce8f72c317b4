package etcdsnapshot

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// TimeLayout is the layout of the UTC time in a backup's name.
const TimeLayout = snapshotstore.TimeLayout

// BackupName is the name of a backup under prefix:
// <prefix>_c<cluster ID in hex>_v<revision>_<UTC time as 20060102-150405>.
// A cluster ID of 0 (unknown) gives the older form without it,
// <prefix>_v<revision>_<time>.
func BackupName(prefix string, clusterID uint64, revision int64, t time.Time) string {
	if clusterID == 0 {
		return fmt.Sprintf("%s_v%d_%s", prefix, revision, t.UTC().Format(TimeLayout))
	}
	return fmt.Sprintf("%s_c%x_v%d_%s", prefix, clusterID, revision, t.UTC().Format(TimeLayout))
}

// BackupInfo is what a backup's name says.
type BackupInfo struct {
	// ClusterID is the etcd cluster ID of the cluster the snapshot came
	// from; 0 for a name of the older form, which does not carry it.
	ClusterID uint64
	// Revision is the snapshot's revision.
	Revision int64
	// Time is when the snapshot was taken.
	Time time.Time
}

// ParseBackupName returns what name, a backup's name under prefix, says,
// and false when name is not one. Both forms parse: with a cluster ID and
// without one.
func ParseBackupName(prefix, name string) (BackupInfo, bool) {
	rest, found := strings.CutPrefix(name, prefix+"_")
	if !found {
		return BackupInfo{}, false
	}
	var info BackupInfo
	if idText, after, found := strings.Cut(rest, "_"); found && strings.HasPrefix(idText, "c") {
		id, err := strconv.ParseUint(idText[1:], 16, 64)
		if err != nil || id == 0 || strconv.FormatUint(id, 16) != idText[1:] {
			return BackupInfo{}, false
		}
		info.ClusterID, rest = id, after
	}
	rest, found = strings.CutPrefix(rest, "v")
	if !found {
		return BackupInfo{}, false
	}
	revText, timeText, found := strings.Cut(rest, "_")
	if !found {
		return BackupInfo{}, false
	}
	revision, err := strconv.ParseInt(revText, 10, 64)
	if err != nil || revision < 0 || strconv.FormatInt(revision, 10) != revText {
		return BackupInfo{}, false
	}
	t, err := time.Parse(TimeLayout, timeText)
	if err != nil {
		return BackupInfo{}, false
	}
	info.Revision, info.Time = revision, t
	return info, true
}

// ParseExactName returns what the name of a backup says when its prefix is
// not known (an exact backup named for a restore), and false when name is
// not a backup's name.
func ParseExactName(name string) (BackupInfo, bool) {
	i := strings.LastIndex(name, "_v")
	if i <= 0 {
		return BackupInfo{}, false
	}
	prefix := name[:i]
	if j := strings.LastIndex(prefix, "_c"); j > 0 {
		if info, ok := ParseBackupName(prefix[:j], name); ok {
			return info, true
		}
	}
	return ParseBackupName(prefix, name)
}

// backup is one stored backup: its name and what the name says.
type backup struct {
	Name string
	BackupInfo
}

// backupsUnder returns the names among names that are backups under prefix,
// oldest first: by time, then revision, then name.
func backupsUnder(prefix string, names []string) []backup {
	var out []backup
	for _, name := range names {
		if info, ok := ParseBackupName(prefix, name); ok {
			out = append(out, backup{Name: name, BackupInfo: info})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		if out[i].Revision != out[j].Revision {
			return out[i].Revision < out[j].Revision
		}
		return out[i].Name < out[j].Name
	})
	return out
}
