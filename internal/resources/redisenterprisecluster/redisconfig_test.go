package redisenterprisecluster

import (
	"strings"
	"testing"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestIsLive(t *testing.T) {
	for key, want := range map[string]bool{
		"maxmemory-policy": true, "timeout": true, "maxclients": true, "slowlog-max-len": true, "hz": true,
		"databases": false, "io-threads": false, "port": false, "requirepass": false, "tls-port": false,
	} {
		if got := IsLive(key); got != want {
			t.Errorf("IsLive(%s) = %v, want %v", key, got, want)
		}
	}
}

// built returns the redis.conf of the ConfigMap and the template's hash
// of a cluster with cfg.
func built(t *testing.T, cfg redisv1alpha1.RedisConfig) (conf, hash string, err error) {
	t.Helper()
	owner := resources.Owner{GVK: redisv1alpha1.GroupVersion.WithKind("RedisEnterpriseCluster"), Name: "r", Namespace: "ns", UID: "uid"}
	c, err := Build(owner, &redisv1alpha1.RedisEnterpriseClusterSpec{Nodes: 3, RedisConfig: cfg}, Input{})
	if err != nil {
		return "", "", err
	}
	return c.ConfigMap.Data[ConfigFile], c.StatefulSet.Spec.Template.Annotations[ConfigHashAnnotation], nil
}

func TestRedisConfigReachesTheFileAndRollsOnlyWhatNeedsARestart(t *testing.T) {
	_, base, err := built(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   redisv1alpha1.RedisConfig
		lines []string
		// rolls is whether the pod template changes.
		rolls bool
		err   string
	}{
		{name: "should set a live parameter in the file without rolling the pods", cfg: redisv1alpha1.RedisConfig{"maxmemory-policy": "allkeys-lru", "timeout": "300"},
			lines: []string{"maxmemory-policy allkeys-lru\n", "timeout 300\n"}},
		{name: "should write an empty value as two quotes", cfg: redisv1alpha1.RedisConfig{"notify-keyspace-events": ""},
			lines: []string{"notify-keyspace-events \"\"\n"}},
		{name: "should roll the pods for a parameter read at start", cfg: redisv1alpha1.RedisConfig{"databases": "32"},
			lines: []string{"databases 32\n"}, rolls: true},
		{name: "should refuse a parameter the operator sets", cfg: redisv1alpha1.RedisConfig{"requirepass": "x"}, err: "spec.redisConfig.requirepass"},
		{name: "should refuse a tls parameter", cfg: redisv1alpha1.RedisConfig{"tls-port": "6380"}, err: "spec.redisConfig.tls-port"},
		{name: "should refuse an unknown parameter", cfg: redisv1alpha1.RedisConfig{"no-such-thing": "1"}, err: "spec.redisConfig.no-such-thing"},
		{name: "should refuse a value that holds a line break", cfg: redisv1alpha1.RedisConfig{"timeout": "1\nreplicaof x 1"}, err: "spec.redisConfig.timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, hash, err := built(t, tt.cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tt.lines {
				if !strings.Contains(conf, l) {
					t.Errorf("redis.conf lacks %q:\n%s", l, conf)
				}
			}
			if rolled := hash != base; rolled != tt.rolls {
				t.Errorf("the template's hash changed: %v, want %v", rolled, tt.rolls)
			}
		})
	}
	// The parameters of spec.redisConfig come after the operator's
	// maxmemory: the later line wins when Redis reads the file.
	conf, _, _ := built(t, redisv1alpha1.RedisConfig{"maxmemory-policy": "allkeys-lru"})
	if i := strings.Index(conf, "maxmemory-policy allkeys-lru"); i < 0 || i < strings.LastIndex(conf, "replica-priority") {
		t.Errorf("the parameters are not last:\n%s", conf)
	}
}

func TestPlanConfiguresStaleNodesPrimaryFirst(t *testing.T) {
	stale := func(n Node, keys ...string) Node { return with(n, func(n *Node) { n.StaleConfig = keys }) }
	tests := []struct {
		name   string
		nodes  []Node
		action Action
		target string
	}{
		{name: "should configure the primary first", nodes: []Node{stale(primaryNode("r-0", 1), "timeout"), stale(replicaNode("r-1", "r-0", 1), "timeout"), replicaNode("r-2", "r-0", 1)},
			action: Configure, target: "r-0"},
		{name: "should configure a replica once the primary runs the values", nodes: []Node{primaryNode("r-0", 1), replicaNode("r-1", "r-0", 1), stale(replicaNode("r-2", "r-0", 1), "hz")},
			action: Configure, target: "r-2"},
		{name: "should take no step once every node runs the values", nodes: []Node{primaryNode("r-0", 1), replicaNode("r-1", "r-0", 1), replicaNode("r-2", "r-0", 1)}},
		{name: "should wait for a replica out of sync first", nodes: []Node{stale(primaryNode("r-0", 1), "hz"), orphanNode("r-1", "r-0", 1), replicaNode("r-2", "r-0", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(Observation{Want: 3, Recorded: "r-0", Nodes: tt.nodes, Settled: true, FailoverAfter: window})
			if d.Action != tt.action || d.Target != tt.target {
				t.Errorf("step %s %s (%s), want %s %s", d.Action, d.Target, d.Message, tt.action, tt.target)
			}
			if d.Action == Configure && d.State != redisv1alpha1.StateRunning {
				t.Errorf("state %s while configuring a running cluster", d.State)
			}
		})
	}
}
