package redis

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// primaryDown remembers, per RedisEnterpriseCluster, since when its
// recorded primary has been seen down, so that a failover waits out its
// window across passes. It lives in memory: an operator that restarts
// starts the window again, which only delays a failover.
type primaryDown struct {
	mu    sync.Mutex
	since map[types.NamespacedName]downSince
}

type downSince struct {
	primary string
	at      time.Time
}

// observe records whether primary is down at now and returns for how long
// it has been (zero when it is not).
func (p *primaryDown) observe(key types.NamespacedName, primary string, down bool, now time.Time) time.Duration {
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
		s = downSince{primary: primary, at: now}
		p.since[key] = s
	}
	return now.Sub(s.at)
}
