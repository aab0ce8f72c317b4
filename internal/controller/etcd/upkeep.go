package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
)

// etcdUpkeepBudget bounds a step that keeps the database small: a
// compaction waits for every member's backend, and a defragmentation
// rewrites a database of up to the quota's size, which takes longer than
// a membership change.
const etcdUpkeepBudget = 2 * time.Minute

// isUpkeep reports whether k is a step that keeps the database small
// (see upkeep).
func isUpkeep(k etcdcluster.ActionKind) bool {
	return k == etcdcluster.Compact || k == etcdcluster.Defragment || k == etcdcluster.Disarm
}

// upkeep takes a step that keeps the database small, and says what the
// status records of it: the compaction of a NOSPACE remedy, a member's
// defragmentation, or, once the alarm is disarmed, no remedy under way.
// Each is idempotent: a pass that stopped before its status was written
// takes it again.
func (e *etcdOps) upkeep(ctx context.Context, seen *etcdObservation, a etcdcluster.Action) (etcdActed, error) {
	now := metav1.Time{Time: e.clock.Now()}
	obs := seen.obs
	var endpoints []string
	for _, m := range obs.Members {
		// A learner takes neither a compaction nor a disarm.
		if url, ok := seen.urls[m.Name]; ok && m.Healthy && !m.Learner && (a.Kind != etcdcluster.Defragment || m.Name == a.Member) {
			endpoints = append(endpoints, url)
		}
	}
	if len(endpoints) == 0 {
		return etcdActed{}, errors.New("no healthy member to send the step to")
	}
	cli, err := e.dial(ctx, endpoints)
	if err != nil {
		return etcdActed{}, err
	}
	defer cli.Close()
	switch a.Kind {
	case etcdcluster.Compact:
		if err := cli.Compact(ctx, a.Revision); err != nil {
			return etcdActed{}, fmt.Errorf("compact to revision %d: %w", a.Revision, err)
		}
		return etcdActed{remedy: &etcdv1beta2.NoSpaceRemedy{CompactedAt: now, CompactedRevision: a.Revision}, remedySet: true}, nil
	case etcdcluster.Defragment:
		if err := cli.Defragment(ctx, endpoints[0]); err != nil {
			return etcdActed{}, fmt.Errorf("defragment %s: %w", a.Member, err)
		}
		members := etcdcluster.Record(obs, obs.Members)
		for i := range members {
			if members[i].Name == a.Member {
				members[i].DefragmentedAt = &now
			}
		}
		return etcdActed{members: members}, nil
	case etcdcluster.Disarm:
		for _, alarm := range etcdcluster.NoSpaceAlarms(obs.Members) {
			if err := cli.AlarmDisarm(ctx, etcd.Alarm{Name: alarm.Name, MemberID: alarm.Member}); err != nil {
				return etcdActed{}, fmt.Errorf("disarm %s: %w", alarm.Name, err)
			}
		}
		return etcdActed{remedySet: true}, nil
	}
	return etcdActed{}, fmt.Errorf("unknown upkeep step %q", a.Kind)
}
