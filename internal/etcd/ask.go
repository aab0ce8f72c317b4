package etcd

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// View is one view of a cluster made from what its member pods answer.
type View struct {
	// Reachable is whether a member of the cluster answered with its
	// member list.
	Reachable bool
	// ClusterID is the cluster the view is of.
	ClusterID uint64
	// Members is the leader's member list, else that of a member that
	// knows a leader, else any member's.
	Members []Answered
	// FromLeader is whether Members is the leader's list.
	FromLeader bool
	// Foreign names the pods that answered as members of another cluster,
	// or as another member than their own.
	Foreign []string
}

// Answered is one member of a View.
type Answered struct {
	Member
	// Pod is the pod the member is: its name, else (before it has
	// started) the pod of its peer URL, else its ID in hexadecimal.
	Pod string
	// Leader is whether it is the leader its members know.
	Leader bool
	// Status is what its pod said of it; nil when the pod did not answer
	// as this member.
	Status *Status
}

// PodOfPeerURL names the pod a member's peer URL belongs to.
type PodOfPeerURL func(peerURL string) (pod string, ok bool)

// podAnswer is what one member pod answered.
type podAnswer struct {
	status *Status
	list   *MemberList
}

// Ask asks each member pod (urls: pod name to client URL), in parallel,
// each call bounded by callTimeout, for its status and its member list,
// and makes one view of them. Only the answers of one cluster count: the
// cluster recorded (when not 0), else the one most pods answer for. A pod
// counts only if it answers as the member of its own name (its name, or
// its peer URL by podOf): a pod that carries the kind's labels but runs
// another cluster's member, or another member, is never counted.
func Ask(ctx context.Context, dial Dialer, urls map[string]string, recorded uint64, podOf PodOfPeerURL, callTimeout time.Duration) View {
	names := slices.Sorted(maps.Keys(urls))
	answers := askEach(ctx, dial, names, urls, callTimeout)
	own := ownMember(podOf)
	clusterID := recorded
	if clusterID == 0 {
		clusterID = own.mostAnswered(names, answers)
	}
	out := View{ClusterID: clusterID}
	var list *MemberList
	for i, a := range answers {
		if a.status == nil || a.status.ClusterID != clusterID || (a.list != nil && !own.selfIn(names[i], a.status, a.list)) {
			if a.status != nil {
				out.Foreign = append(out.Foreign, names[i])
			}
			continue
		}
		switch st := a.status; {
		case a.list == nil:
		case st.Leader != 0 && st.Leader == st.MemberID:
			list, out.FromLeader = a.list, true
		case list == nil || (st.Leader != 0 && !out.FromLeader):
			list = a.list
		}
	}
	if list == nil {
		// No member of the cluster answers: the planner tells a seed that
		// is starting from a cluster that lost its quorum.
		return out
	}
	// The statuses of the cluster's members, by member ID; a status counts
	// only from a pod whose member is in the list under the pod's name.
	byID := map[uint64]*Status{}
	var leader uint64
	for i, a := range answers {
		st := a.status
		if st == nil || st.ClusterID != clusterID || slices.Contains(out.Foreign, names[i]) ||
			!slices.ContainsFunc(list.Members, func(m Member) bool { return m.ID == st.MemberID && own.is(names[i], m) }) {
			continue
		}
		byID[st.MemberID] = st
		if st.Leader != 0 {
			leader = st.Leader
		}
	}
	out.Reachable = true
	for _, m := range list.Members {
		pod := m.Name
		if pod == "" && len(m.PeerURLs) > 0 {
			pod, _ = podOf(m.PeerURLs[0])
		}
		out.Members = append(out.Members, Answered{
			Member: m,
			Pod:    cmp.Or(pod, strconv.FormatUint(m.ID, 16)),
			Leader: m.ID == leader,
			Status: byID[m.ID],
		})
	}
	return out
}

// askEach asks the pod of each name, at its URL in urls, in parallel, for
// its member's status and member list.
func askEach(ctx context.Context, dial Dialer, names []string, urls map[string]string, callTimeout time.Duration) []podAnswer {
	answers := make([]podAnswer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			url := urls[name]
			cli, err := dial(ctx, []string{url})
			if err != nil {
				return
			}
			defer cli.Close()
			c, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			st, err := cli.Status(c, url)
			if err != nil {
				return
			}
			answers[i].status = st
			// A learner may refuse the list; its status still counts.
			if list, err := cli.MemberList(c); err == nil {
				answers[i].list = list
			}
		})
	}
	wg.Wait()
	return answers
}

// ownMember tells whether a member a pod answers as is the pod's own.
type ownMember PodOfPeerURL

// is reports whether mem, a member of a list, is the member of the pod
// called pod: by its name, or, before it has started, its peer URL.
func (o ownMember) is(pod string, mem Member) bool {
	if mem.Name != "" {
		return mem.Name == pod
	}
	for _, u := range mem.PeerURLs {
		if n, ok := o(u); ok && n == pod {
			return true
		}
	}
	return false
}

// selfIn reports whether the pod's member (st) is in the list it gave, of
// its own cluster, as the pod's own member.
func (o ownMember) selfIn(pod string, st *Status, list *MemberList) bool {
	return list != nil && list.ClusterID == st.ClusterID && slices.ContainsFunc(list.Members, func(m Member) bool {
		return m.ID == st.MemberID && o.is(pod, m)
	})
}

// mostAnswered is the cluster most pods answer for as their own member
// (ties: the lowest ID, so that every pass picks the same); 0 when none.
func (o ownMember) mostAnswered(names []string, answers []podAnswer) uint64 {
	votes := map[uint64]int{}
	for i, a := range answers {
		if a.status != nil && o.selfIn(names[i], a.status, a.list) {
			votes[a.status.ClusterID]++
		}
	}
	var id uint64
	for c, n := range votes {
		if id == 0 || n > votes[id] || (n == votes[id] && c < id) {
			id = c
		}
	}
	return id
}
