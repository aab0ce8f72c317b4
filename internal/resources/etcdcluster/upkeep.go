package etcdcluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// The steps that keep a member's database small: etcd compacts its own
// history (see Space), but only a defragmentation gives the freed pages
// back, and only a disarm lifts a NOSPACE alarm.
const (
	// Compact compacts the key space to Action.Revision: the first step
	// of freeing the space of a cluster that raised NOSPACE.
	Compact ActionKind = "Compact"
	// Defragment defragments one member's database; it serves nothing
	// meanwhile, so one member at a time, followers first, the leader
	// last.
	Defragment ActionKind = "Defragment"
	// Disarm disarms the NOSPACE alarms the members report
	// (NoSpaceAlarms) once every member is defragmented.
	Disarm ActionKind = "Disarm"
)

// liveDataShare is the share of the backend quota, in percent, that a
// member's live data (what a compaction and a defragmentation leave) may
// fill for its NOSPACE alarm to be disarmed: past it, writes would raise
// the alarm again at once, and the data itself must shrink.
const liveDataShare = 90

// remedyNoSpace is the next step of freeing the space of a cluster whose
// only alarm is NOSPACE (by names the members that report it): compact to
// the current revision (recorded as o.Remedy), defragment each member not
// defragmented since, followers first and the leader last, then disarm
// the alarm. Each step is idempotent, so a pass that finds the remedy
// half done goes on from what is recorded. The members keep serving
// reads meanwhile; writes are refused until the disarm, so Ready is False
// (reason NoSpace) all along.
func remedyNoSpace(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member, by string) Decision {
	prefix := fmt.Sprintf("etcd raised its NOSPACE alarm (reported by %s): the cluster refuses writes and serves reads; remedying: ", by)
	d := Decision{Reason: etcdv1beta2.ReasonNoSpace}
	var down []string
	for _, m := range members {
		if !m.Healthy || !m.Started {
			down = append(down, m.Name)
		}
	}
	if len(down) > 0 {
		d.Message = prefix + fmt.Sprintf("waiting for members %s to be started and healthy, to defragment every member", strings.Join(down, ", "))
		return d
	}
	if o.Remedy == nil {
		var rev int64
		for _, m := range members {
			rev = max(rev, m.Revision)
		}
		if rev < 1 {
			d.Message = prefix + "waiting for the members to report their revision"
			return d
		}
		d.Action = Action{Kind: Compact, Revision: rev}
		d.Message = prefix + fmt.Sprintf("compacting the history before revision %d", rev)
		return d
	}
	// A learner serves no defragmentation (etcd takes only a status
	// call and serializable reads from one); it is not counted.
	order := slices.DeleteFunc(defragOrder(members), func(m Member) bool { return m.Learner })
	for i, m := range order {
		if at := defragmentedAt(o, m); at == nil || at.Before(o.Remedy.CompactedAt.Time) {
			d.Action = Action{Kind: Defragment, Member: m.Name, ID: m.ID}
			d.Message = prefix + fmt.Sprintf("compacted to revision %d, defragmenting %s (%d/%d)", o.Remedy.CompactedRevision, m.Name, i+1, len(order))
			return d
		}
	}
	quota := BackendQuota(spec)
	for _, m := range members {
		if m.DBSizeInUse*100 >= quota*liveDataShare {
			d.Failure = true
			d.Message = prefix + fmt.Sprintf(
				"compacted to revision %d and defragmented every member, but member %s still holds %s of live data, %d%% or more of the backend quota %s: the alarm would be raised again at the next write. Delete keys (etcd takes deletes while the alarm is raised), or restore a snapshot into a cluster with a larger spec.maintenance.backendQuota; the operator disarms the alarm once the live data fits",
				o.Remedy.CompactedRevision, m.Name, bytesOf(m.DBSizeInUse), liveDataShare, bytesOf(quota))
			return d
		}
	}
	d.Action = Action{Kind: Disarm}
	d.Message = prefix + fmt.Sprintf("compacted to revision %d, %d/%d members defragmented, disarming the alarm", o.Remedy.CompactedRevision, len(order), len(order))
	return d
}

// NoSpaceAlarms are the NOSPACE alarms members report, each once: what
// Disarm disarms.
func NoSpaceAlarms(members []Member) []Alarm {
	var alarms []Alarm
	for _, m := range members {
		for _, a := range m.Alarms {
			if a.Name == AlarmNoSpace && !slices.Contains(alarms, a) {
				alarms = append(alarms, a)
			}
		}
	}
	return alarms
}

// RemedyRecord is the NOSPACE remedy to keep recorded (status.noSpaceRemedy)
// when the step records none: the one recorded while the alarm is raised,
// or while no member answers; none once the alarm is gone.
func RemedyRecord(o Observed) *etcdv1beta2.NoSpaceRemedy {
	if !o.Reachable {
		return o.Remedy
	}
	for _, m := range o.Members {
		if slices.ContainsFunc(m.Alarms, func(a Alarm) bool { return a.Name == AlarmNoSpace }) {
			return o.Remedy
		}
	}
	return nil
}

// scheduledDefrag returns the defragmentation of the next member due, at
// a cluster at its spec with every member healthy and every pod ready: a
// member not defragmented for spec.maintenance.defragmentation's
// minInterval, whose database is at least its minSize and at least its
// fragmentedPercent free pages. Followers go first, the leader last; one
// member per step. false when none is due. The cluster stays Ready.
func scheduledDefrag(spec *etcdv1beta2.EtcdClusterSpec, o Observed, members []Member) (Decision, bool) {
	if _, ok := restarting(o, members); ok {
		return Decision{}, false
	}
	u := spec.Upkeep()
	for _, m := range defragOrder(members) {
		if !m.Healthy || !m.Started || m.Learner || m.DBSize <= 0 || m.DBSize < u.DefragMinSize {
			continue
		}
		if at := defragmentedAt(o, m); at != nil && o.Now.Sub(*at) < u.DefragInterval {
			continue
		}
		free := m.DBSize - m.DBSizeInUse
		if free*100 < m.DBSize*int64(u.FragmentedPercent) {
			continue
		}
		return Decision{Action: Action{Kind: Defragment, Member: m.Name, ID: m.ID}, Message: fmt.Sprintf(
			"%d members at version %s; defragmenting %s: %d%% of its %s database is free pages",
			len(members), spec.Version, m.Name, free*100/m.DBSize, bytesOf(m.DBSize))}, true
	}
	return Decision{}, false
}

// defragOrder is the order members are defragmented in: the followers by
// ordinal, then the leader, so that the cluster has one election at most.
func defragOrder(members []Member) []Member {
	out := slices.Clone(members)
	slices.SortStableFunc(out, func(a, b Member) int {
		switch {
		case a.Leader == b.Leader:
			return 0
		case a.Leader:
			return 1
		}
		return -1
	})
	return out
}

// defragmentedAt is when member m was last defragmented, as recorded
// (status.members' defragmentedAt); nil when never.
func defragmentedAt(o Observed, m Member) *time.Time {
	id := strconv.FormatUint(m.ID, 16)
	for _, r := range o.Recorded {
		if r.ID == id && r.DefragmentedAt != nil {
			return &r.DefragmentedAt.Time
		}
	}
	return nil
}

// bytesOf writes n bytes as a quantity (64Mi).
func bytesOf(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
