package redissnapshot

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// backupSuffix ends every backup's name: the file is an RDB.
const backupSuffix = ".rdb"

// BackupName is the name of a backup under prefix:
// <prefix>_<UTC time as 20060102-150405>_o<replication offset>.rdb.
func BackupName(prefix string, t time.Time, offset int64) string {
	return fmt.Sprintf("%s_%s_o%d%s", prefix, t.UTC().Format(snapshotstore.TimeLayout), offset, backupSuffix)
}

// ParseBackupName returns the time and offset in name, a backup's name
// under prefix, and false when name is not one.
func ParseBackupName(prefix, name string) (t time.Time, offset int64, ok bool) {
	rest, found := strings.CutPrefix(name, prefix+"_")
	if !found {
		return time.Time{}, 0, false
	}
	rest, found = strings.CutSuffix(rest, backupSuffix)
	if !found {
		return time.Time{}, 0, false
	}
	timeText, offsetText, found := strings.Cut(rest, "_o")
	if !found {
		return time.Time{}, 0, false
	}
	t, err := time.Parse(snapshotstore.TimeLayout, timeText)
	if err != nil {
		return time.Time{}, 0, false
	}
	offset, err = strconv.ParseInt(offsetText, 10, 64)
	if err != nil || offset < 0 || strconv.FormatInt(offset, 10) != offsetText {
		return time.Time{}, 0, false
	}
	return t, offset, true
}

// backup is one stored backup: its name and what the name says.
type backup struct {
	Name   string
	Time   time.Time
	Offset int64
}

// backupsUnder returns the names among names that are backups under prefix,
// oldest first: by time, then by offset. Offsets of different replication
// histories do not compare, so the time comes first.
func backupsUnder(prefix string, names []string) []backup {
	var out []backup
	for _, name := range names {
		if t, offset, ok := ParseBackupName(prefix, name); ok {
			out = append(out, backup{Name: name, Time: t, Offset: offset})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		if out[i].Offset != out[j].Offset {
			return out[i].Offset < out[j].Offset
		}
		return out[i].Name < out[j].Name
	})
	return out
}
