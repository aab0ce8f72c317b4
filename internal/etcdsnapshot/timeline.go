package etcdsnapshot

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// timeline is the backups of one cluster (one cluster ID) under a prefix,
// oldest first.
type timeline struct {
	clusterID uint64
	backups   []backup
}

func (t timeline) oldest() backup { return t.backups[0] }
func (t timeline) newest() backup { return t.backups[len(t.backups)-1] }

// holdsWithin reports whether t has a backup strictly between the oldest
// and the newest backup of other: both clusters wrote to the prefix in
// that span.
func (t timeline) holdsWithin(other timeline) bool {
	from, to := other.oldest().Time, other.newest().Time
	return slices.ContainsFunc(t.backups, func(b backup) bool { return b.Time.After(from) && b.Time.Before(to) })
}

// timelinesOf groups backups (oldest first) by cluster ID, each group
// oldest first; backups of the older form, without an ID, are one group.
func timelinesOf(backups []backup) []timeline {
	var out []timeline
	for _, b := range backups {
		i := slices.IndexFunc(out, func(t timeline) bool { return t.clusterID == b.ClusterID })
		if i < 0 {
			out = append(out, timeline{clusterID: b.ClusterID})
			i = len(out) - 1
		}
		out[i].backups = append(out[i].backups, b)
	}
	return out
}

// chooseBackup returns, of backups (oldest first, not empty), the one a
// restore from prefix takes: in the timeline that holds the most recent
// backup, the one with the highest revision (then the latest). A cluster
// restored from an older snapshot, or made again under the same name,
// starts a new timeline whose revisions may be lower than the old one's,
// so revisions are compared only within a timeline. When that newest
// timeline has a backup within another's span, or another one within its
// span, two clusters wrote to the prefix at once and it fails with
// TimelinesInterleaved.
func chooseBackup(display string, backups []backup) (backup, error) {
	timelines := timelinesOf(backups)
	latest := backups[len(backups)-1].ClusterID
	i := slices.IndexFunc(timelines, func(t timeline) bool { return t.clusterID == latest })
	newest := timelines[i]
	var clash []string
	for _, other := range timelines {
		if other.clusterID != newest.clusterID && (other.holdsWithin(newest) || newest.holdsWithin(other)) {
			clash = append(clash, clusterIDText(other.clusterID))
		}
	}
	if len(clash) > 0 {
		return backup{}, &Error{Reason: ReasonTimelinesInterleaved, Err: fmt.Errorf(
			"the backups under %s come from clusters %s and %s, which wrote to it at the same time, so which is the newest cannot be told: name an exact snapshot instead",
			display, strings.Join(clash, ", "), clusterIDText(newest.clusterID))}
	}
	chosen := newest.backups[0]
	for _, b := range newest.backups[1:] {
		// The backups are oldest first: a tie on revision goes to the later.
		if b.Revision >= chosen.Revision {
			chosen = b
		}
	}
	return chosen, nil
}

// clusterIDText is a cluster ID as backup names carry it, in hex, or
// "unknown" for backups without one.
func clusterIDText(id uint64) string {
	if id == 0 {
		return "unknown"
	}
	return strconv.FormatUint(id, 16)
}
