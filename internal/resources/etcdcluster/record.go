package etcdcluster

import (
	"slices"
	"strconv"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
)

// Record returns status.members for the members etcd reports: each by
// name, in ordinal order, with its pod's uid once it has started and is
// healthy in it. A uid once recorded stays while the member does: a pod
// with another uid is a pod that lost the member's data (see Next).
func Record(o Observed, members []Member) []etcdv1beta2.EtcdMember {
	recorded := map[string]etcdv1beta2.EtcdMember{}
	for _, r := range o.Recorded {
		recorded[r.ID] = r
	}
	out := make([]etcdv1beta2.EtcdMember, 0, len(members))
	for _, m := range members {
		id := strconv.FormatUint(m.ID, 16)
		e := etcdv1beta2.EtcdMember{Name: m.Name, ID: id, Healthy: m.Healthy, Learner: m.Learner, Leader: m.Leader, Version: m.Version,
			PodUID: recorded[id].PodUID}
		if pod, ok := o.Pods[m.Name]; ok && e.PodUID == "" && m.Started && m.Healthy {
			e.PodUID = pod.UID
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b etcdv1beta2.EtcdMember) int { return compareNames(o.Cluster, a.Name, b.Name) })
	// Two members of one name (one removed and added back while etcd
	// still lists both) would make status.members invalid: keep the first.
	return slices.CompactFunc(out, func(a, b etcdv1beta2.EtcdMember) bool { return a.Name == b.Name })
}
