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
// <prefix>_v<revision>_<UTC time as 20060102-150405>.
func BackupName(prefix string, revision int64, t time.Time) string {
	return fmt.Sprintf("%s_v%d_%s", prefix, revision, t.UTC().Format(TimeLayout))
}

// ParseBackupName returns the revision and time in name, a backup's name
// under prefix, and false when name is not one.
func ParseBackupName(prefix, name string) (revision int64, t time.Time, ok bool) {
	rest, found := strings.CutPrefix(name, prefix+"_v")
	if !found {
		return 0, time.Time{}, false
	}
	revText, timeText, found := strings.Cut(rest, "_")
	if !found {
		return 0, time.Time{}, false
	}
	revision, err := strconv.ParseInt(revText, 10, 64)
	if err != nil || revision < 0 || strconv.FormatInt(revision, 10) != revText {
		return 0, time.Time{}, false
	}
	t, err = time.Parse(TimeLayout, timeText)
	if err != nil {
		return 0, time.Time{}, false
	}
	return revision, t, true
}

// backup is one stored backup: its name and what the name says.
type backup struct {
	Name     string
	Revision int64
	Time     time.Time
}

// backupsUnder returns the names among names that are backups under prefix,
// oldest first: by revision, then by time.
func backupsUnder(prefix string, names []string) []backup {
	var out []backup
	for _, name := range names {
		rev, t, ok := ParseBackupName(prefix, name)
		if ok {
			out = append(out, backup{Name: name, Revision: rev, Time: t})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Revision != out[j].Revision {
			return out[i].Revision < out[j].Revision
		}
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		return out[i].Name < out[j].Name
	})
	return out
}
