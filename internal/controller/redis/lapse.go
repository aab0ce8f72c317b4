package redis

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// lapses remembers, per RedisEnterpriseCluster, since when a Running
// cluster has been seen otherwise with no step to take (a node that did
// not answer in time, a replica a few seconds behind), so that the status
// says so only once a second look, at least confirmAfter after the first,
// finds it too: one slow answer on a loaded machine is not worth two
// status writes and two changes of the Ready condition. Steps are never
// held: a lapse that asks for one (a failover, once its window is out)
// takes it at the look that finds it. It lives in memory: an operator
// that restarts starts again from its first look.
type lapses struct {
	mu    sync.Mutex
	since map[types.NamespacedName]time.Time
}

// hold records whether the cluster key is in a lapse at now, and reports
// whether its status should still say Running: the lapse is new, first
// seen less than confirmAfter ago.
func (l *lapses) hold(key types.NamespacedName, lapsed bool, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !lapsed {
		delete(l.since, key)
		return false
	}
	if l.since == nil {
		l.since = map[types.NamespacedName]time.Time{}
	}
	first, ok := l.since[key]
	if !ok {
		l.since[key] = now
		return true
	}
	return now.Sub(first) < confirmAfter
}

// forget drops what is remembered of key (a cluster deleted).
func (l *lapses) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.since, key)
}
