package redis

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// primaryDown remembers, per RedisEnterpriseCluster, since when its
// recorded primary has been down, so that a failover waits out its window
// across passes. The window starts when the primary went silent by its
// replicas' account, when they all say (unheard), else at the first look
// that finds it down: a cluster looked at every 10 s at rest would
// otherwise fail over up to a recheck interval late, and clusters failing
// together would fail over spread across it. One look is still not a
// verdict: the window is counted only once a second look, at least
// confirmAfter after the first, finds the primary down too. It lives in
// memory: an operator that restarts starts again from its first look.
type primaryDown struct {
	mu    sync.Mutex
	since map[types.NamespacedName]downSince
}

type downSince struct {
	primary string
	// at is when the primary went down; first, the look that found it.
	at, first time.Time
}

// confirmAfter is how long after the first look that finds a primary down
// a second must find it down too before the replicas' account counts.
const confirmAfter = time.Second

// observe records whether primary is down at now, silent for unheard by
// its replicas' account (zero when unknown), and returns for how long it
// has been (zero when it is not).
func (p *primaryDown) observe(key types.NamespacedName, primary string, down bool, unheard time.Duration, now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !down {
		delete(p.since, key)
		return 0
	}
	if p.since == nil {
		p.since = map[types.NamespacedName]downSince{}
	}
	s, ok := p.since[key]
	if !ok || s.primary != primary {
		s = downSince{primary: primary, at: now.Add(-max(unheard, 0)), first: now}
		p.since[key] = s
	}
	if now.Sub(s.first) < confirmAfter {
		return now.Sub(s.first)
	}
	return now.Sub(s.at)
}
