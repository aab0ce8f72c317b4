package etcdcluster

import (
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Record returns status.members for the members etcd reports: each by
// name, in ordinal order, with the uid of its pod's claim while it is
// started and healthy on it. Otherwise the uid recorded stays: a pod on
// another claim that cannot start is a pod without the member's data (see
// Next). A member healthy on another claim has its data there (restored).
// A member that has not joined (not started, or a learner) keeps the
// addedAt recorded, or gets o.Now: when the operator added it, or first
// saw it not joined. The defragmentedAt recorded stays.
func Record(o Observed, members []Member) []etcdv1beta2.EtcdMember {
	recorded := map[string]etcdv1beta2.EtcdMember{}
	for _, r := range o.Recorded {
		recorded[r.ID] = r
	}
	out := make([]etcdv1beta2.EtcdMember, 0, len(members))
	for _, m := range members {
		id := strconv.FormatUint(m.ID, 16)
		e := etcdv1beta2.EtcdMember{Name: m.Name, ID: id, Healthy: m.Healthy, Learner: m.Learner, Leader: m.Leader, Version: m.Version,
			ClaimUID: recorded[id].ClaimUID, DefragmentedAt: recorded[id].DefragmentedAt}
		if pod, ok := o.Pods[m.Name]; ok && pod.ClaimUID != "" && m.Started && m.Healthy {
			e.ClaimUID = pod.ClaimUID
		}
		if !m.Started || m.Learner {
			e.AddedAt = recorded[id].AddedAt
			if e.AddedAt == nil && !o.Now.IsZero() {
				e.AddedAt = &metav1.Time{Time: o.Now}
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b etcdv1beta2.EtcdMember) int { return compareNames(o.Cluster, a.Name, b.Name) })
	// Two members of one name (one removed and added back while etcd
	// still lists both) would make status.members invalid: keep the first.
	return slices.CompactFunc(out, func(a, b etcdv1beta2.EtcdMember) bool { return a.Name == b.Name })
}
