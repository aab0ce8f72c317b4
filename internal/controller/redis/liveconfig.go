package redis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// configurer is what a node client needs to apply the parameters Redis
// takes at run time (redisnode.Client has it; a test's fake may not).
type configurer interface {
	ConfigGet(ctx context.Context, addr, key string) (string, error)
	ConfigSet(ctx context.Context, addr, key, value string) error
}

// liveConfig remembers, per cluster, what the nodes answered to the
// parameters set on them: Redis reports some values in another form than
// they were set in (maxmemory 100mb as 104857600), and a value Redis
// refused is not sent again on every pass, only once the spec changes it
// (or the operator restarts).
type liveConfig struct {
	mu       sync.Mutex
	clusters map[client.ObjectKey]*clusterConfig
}

// clusterConfig is what liveConfig remembers of one cluster.
type clusterConfig struct {
	// reported maps "key=value set" to the value the node reported after.
	reported map[string]string
	// refused maps "key=value" to the node's answer.
	refused map[string]string
}

func (l *liveConfig) of(key client.ObjectKey) *clusterConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clusters == nil {
		l.clusters = map[client.ObjectKey]*clusterConfig{}
	}
	c := l.clusters[key]
	if c == nil {
		c = &clusterConfig{reported: map[string]string{}, refused: map[string]string{}}
		l.clusters[key] = c
	}
	return c
}

func (l *liveConfig) forget(key client.ObjectKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clusters, key)
}

// stale returns the parameters of want the node reports at other values
// than asked (have), leaving out those refused before.
func (l *liveConfig) stale(key client.ObjectKey, want, have map[string]string) []string {
	c := l.of(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, v := range want {
		h, kv := have[k], k+"="+v
		reported, set := c.reported[kv]
		if _, refused := c.refused[kv]; refused || h == v || set && h == reported {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// refusals returns the values of want that a node refused, as messages,
// sorted.
func (l *liveConfig) refusals(key client.ObjectKey, want map[string]string) []string {
	c := l.of(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, v := range want {
		if why, ok := c.refused[k+"="+v]; ok {
			out = append(out, why)
		}
	}
	slices.Sort(out)
	return out
}

// observeConfig reads, on every node that answers, the parameters of
// spec.redisConfig that Redis takes at run time, and notes on each which
// run at other values (Node.StaleConfig).
func (ops *redisOps) observeConfig(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, nodes []redisNode, redis redisnode.Nodes) {
	want := redisenterprisecluster.LiveConfig(&o.Spec)
	c, ok := redis.(configurer)
	if len(want) == 0 || !ok {
		return
	}
	key := client.ObjectKeyFromObject(o)
	var wg sync.WaitGroup
	for i := range nodes {
		n := &nodes[i]
		if !n.plan.Answered || n.addr() == "" {
			continue
		}
		wg.Go(func() {
			have := map[string]string{}
			for k := range want {
				v, err := c.ConfigGet(ctx, n.addr(), k)
				if err != nil {
					// Not known: not set now, and asked again next pass.
					return
				}
				have[k] = v
			}
			n.plan.StaleConfig = ops.config.stale(key, want, have)
		})
	}
	wg.Wait()
}

// configure sets the stale parameters of node n (CONFIG SET), reading each
// back (CONFIG GET) to remember the form Redis reports it in. A value
// Redis refuses is remembered with its answer, for the status, and not
// sent again while the spec asks for it.
func (ops *redisOps) configure(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, n *redisNode, redis redisnode.Nodes) error {
	c, ok := redis.(configurer)
	if !ok || n == nil {
		return nil
	}
	want := redisenterprisecluster.LiveConfig(&o.Spec)
	mem := ops.config.of(client.ObjectKeyFromObject(o))
	for _, k := range n.plan.StaleConfig {
		v := want[k]
		if err := c.ConfigSet(ctx, n.addr(), k, v); err != nil {
			if !redisnode.IsRefused(err) {
				return fmt.Errorf("CONFIG SET %s on %s: %w", k, n.plan.Name, err)
			}
			ops.config.mu.Lock()
			mem.refused[k+"="+v] = fmt.Sprintf("%s refused spec.redisConfig.%s %q: %v", n.plan.Name, k, v, err)
			ops.config.mu.Unlock()
			continue
		}
		got, err := c.ConfigGet(ctx, n.addr(), k)
		if err != nil {
			return fmt.Errorf("CONFIG GET %s on %s: %w", k, n.plan.Name, err)
		}
		ops.config.mu.Lock()
		mem.reported[k+"="+v] = got
		ops.config.mu.Unlock()
	}
	return nil
}

// configCondition sets the RedisConfigApplied condition: false, naming
// each parameter a node refused, or while a node runs one at another
// value; true once every node that answers runs them; none without
// parameters Redis takes at run time.
func configCondition(conds *[]metav1.Condition, want map[string]string, refused []string, stale map[string][]string, generation int64, now metav1.Time) {
	if len(want) == 0 && len(refused) == 0 {
		meta.RemoveStatusCondition(conds, redisv1alpha1.ConditionRedisConfigApplied)
		return
	}
	c := metav1.Condition{Type: redisv1alpha1.ConditionRedisConfigApplied, Status: metav1.ConditionTrue, Reason: redisv1alpha1.ReasonConfigApplied,
		Message:            fmt.Sprintf("Every node runs %s of spec.redisConfig", strings.Join(slices.Sorted(maps.Keys(want)), ", ")),
		ObservedGeneration: generation, LastTransitionTime: now}
	switch {
	case len(refused) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, redisv1alpha1.ReasonParameterRefused, strings.Join(refused, "; ")
	case len(stale) > 0:
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(stale)) {
			parts = append(parts, fmt.Sprintf("%s on %s", strings.Join(stale[name], ", "), name))
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Applying", "Setting "+strings.Join(parts, "; ")
	}
	meta.SetStatusCondition(conds, c)
}

// configState is what the status says of spec.redisConfig after the step
// d: the values refused, and by node the parameters at other values as
// observed, but those of the node d configured (set now, or refused).
func (ops *redisOps) configState(o *redisv1alpha1.RedisEnterpriseCluster, d redisenterprisecluster.Decision, nodes []redisNode) ([]string, map[string][]string) {
	want := redisenterprisecluster.LiveConfig(&o.Spec)
	stale := map[string][]string{}
	for _, n := range nodes {
		if len(n.plan.StaleConfig) > 0 && (d.Action != redisenterprisecluster.Configure || d.Target != n.plan.Name) {
			stale[n.plan.Name] = n.plan.StaleConfig
		}
	}
	return ops.config.refusals(client.ObjectKeyFromObject(o), want), stale
}
