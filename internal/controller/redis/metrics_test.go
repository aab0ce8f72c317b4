package redis

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/clustermetrics"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

func TestRedisSampleOf(t *testing.T) {
	primary := func(name string, offset int64) redisNode {
		return redisNode{plan: redisenterprisecluster.Node{Name: name, Pod: redisenterprisecluster.PodReady, Answered: true, Primary: true, Offset: offset}}
	}
	replica := func(name, follows string, offset int64, inSync bool) redisNode {
		return redisNode{plan: redisenterprisecluster.Node{Name: name, Pod: redisenterprisecluster.PodReady, Answered: true, Follows: follows, Offset: offset,
			LinkUp: inSync, Streaming: inSync, Acked: inSync}}
	}
	silent := func(name string) redisNode {
		return redisNode{plan: redisenterprisecluster.Node{Name: name, Pod: redisenterprisecluster.PodReady}}
	}
	tests := []struct {
		name    string
		primary string
		nodes   []redisNode
		want    redisSample
	}{
		{"should count every node of a cluster in sync healthy, and each replica's lag", "r-0",
			[]redisNode{primary("r-0", 500), replica("r-1", "r-0", 400, true), replica("r-2", "r-0", 500, true)},
			redisSample{Nodes: 3, Healthy: 3, Primary: true, Lag: map[string]int64{"r-1": 100, "r-2": 0}}},
		{"should count a replica out of sync unhealthy but still report its lag", "r-0",
			[]redisNode{primary("r-0", 500), replica("r-1", "r-0", 10, false)},
			redisSample{Nodes: 2, Healthy: 1, Primary: true, Lag: map[string]int64{"r-1": 490}}},
		{"should report no primary and no lag when the primary is silent", "r-0",
			[]redisNode{silent("r-0"), replica("r-1", "r-0", 400, false)},
			redisSample{Nodes: 2, Lag: map[string]int64{}}},
		{"should report no primary when the recorded one answers as a replica", "r-0",
			[]redisNode{replica("r-0", "", 400, false), primary("r-1", 500)},
			redisSample{Nodes: 2, Lag: map[string]int64{}}},
		{"should report a lag of zero for a replica ahead of the offset read from its primary", "r-0",
			[]redisNode{primary("r-0", 500), replica("r-1", "r-0", 520, true)},
			redisSample{Nodes: 2, Healthy: 2, Primary: true, Lag: map[string]int64{"r-1": 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, redisSampleOf(tt.primary, tt.nodes), cmpopts.IgnoreFields(redisSample{}, "PerNode")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Every manager in a process (and every preview) makes the kinds again:
// their gauges register once in controller-runtime's registry, which the
// metrics endpoint serves, and are shared.
func TestGaugesRegisterOnceInControllerRuntimesRegistry(t *testing.T) {
	first, second := newRedisGauges(nil), newRedisGauges(nil)
	if first.primary != second.primary {
		t.Fatal("a second set of gauges was registered beside the first")
	}
	key := client.ObjectKey{Namespace: "registry-test", Name: "r"}
	second.record(key, redisSample{Nodes: 3, Healthy: 3, Primary: true})
	defer first.forget(key)
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "app_operator_redisenterprisecluster_has_primary" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == clustermetrics.LabelNamespace && l.GetValue() == key.Namespace {
					return
				}
			}
		}
	}
	t.Errorf("controller-runtime's registry has no has_primary gauge for %s", key)
}
