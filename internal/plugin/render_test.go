package plugin

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current Render")

// now is the time every golden screen is drawn at.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

func condition(typ, status, reason, message string, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(ago(since))}
}

// The screens an engineer on call sees, as golden files: a Redis cluster
// after a failover, an etcd cluster with TLS and backups mid-upgrade, a
// paused resource of a kind with no members, and a resource the operator
// has not looked at since its last change.
func TestRenderScreens(t *testing.T) {
	cases := map[string]*Screen{
		"redis-after-failover": {
			Kind: "RedisEnterpriseCluster", Namespace: "prod", Name: "redis-enterprise", Created: ago(50 * time.Hour), Generation: 3, ObservedGeneration: 3,
			Summary: []Field{{"State", "Running"}, {"Primary", "redis-enterprise-1"}, {"Nodes", "3 wanted, 3 in the status"}},
			Conditions: []metav1.Condition{
				condition("Ready", "True", "Available", "One primary and every replica in sync", 3*time.Minute),
				condition("Progressing", "False", "RolloutComplete", "The last change has rolled out", 3*time.Minute),
				condition("Degraded", "False", "AsExpected", "Nothing is wrong", 3*time.Minute),
			},
			Members: &Table{Header: []string{"NODE", "ROLE", "HEALTHY", "POD", "RESTARTS", "NODE NAME", "LAG"}, Rows: [][]string{
				{"redis-enterprise-0", "replica", "yes", "Ready", "1", "node-a", "0 B"},
				{"redis-enterprise-1", "primary", "yes", "Ready", "0", "node-b", "-"},
				{"redis-enterprise-2", "replica", "yes", "Ready", "0", "node-c", "1432 B"},
			}},
			Changes: []Change{
				{Time: ago(3 * time.Minute), From: "redis-enterprise-0", To: "redis-enterprise-1", Reason: "Failover"},
				{Time: ago(26 * time.Hour), From: "redis-enterprise-2", To: "redis-enterprise-0", Reason: "Handover"},
				{Time: ago(49 * time.Hour), From: "redis-enterprise-0", To: "redis-enterprise-2", Reason: "Switchover"},
			},
			Certificates: []Certificate{{Secret: "redis-enterprise-tls", NotAfter: now.Add(61 * 24 * time.Hour), Subject: "CN=redis-enterprise"}},
			Backups: []Field{{"Every", "24h0m0s"}, {"Last", "Succeeded"}, {"Succeeded", "2026-11-29T02:00:00Z s3://backups/redis/redis-enterprise-20261129T020000Z.rdb"},
				{"Next due", "2026-11-30T02:00:00Z"}},
			Events: []Event{
				{Last: ago(4 * time.Minute), Type: "Warning", Reason: "FailoverPending", Message: "the primary redis-enterprise-0 does not answer; failing over once it has been down for 10s"},
				{Last: ago(3 * time.Minute), Type: "Warning", Reason: "FailedOver", Message: "promoted redis-enterprise-1, the replica furthest along the lineage of redis-enterprise-0, to primary"},
				{Last: ago(2 * time.Minute), Type: "Normal", Reason: "Available", Message: "One primary and every replica in sync", Count: 2},
			},
		},
		"etcd-upgrading-with-tls": {
			Kind: "EtcdCluster", Namespace: "default", Name: "example", Created: ago(9 * 24 * time.Hour), Generation: 5, ObservedGeneration: 5,
			Summary: []Field{{"Size", "3 wanted, 3 members"}, {"Leader", "example-2"}, {"Version", "3.6.15 running, 3.6.16 wanted"}, {"Cluster ID", "8e9e05c52164694d"}},
			Conditions: []metav1.Condition{
				condition("Ready", "True", "Upgrading", "Upgrading member example-1 to 3.6.16 (2 of 3 members left)", 40*time.Second),
				condition("Progressing", "True", "Upgrading", "Upgrading member example-1 to 3.6.16 (2 of 3 members left)", 40*time.Second),
			},
			Members: &Table{Header: []string{"MEMBER", "ID", "ROLE", "HEALTHY", "VERSION", "POD", "RESTARTS", "NODE NAME"}, Rows: [][]string{
				{"example-0", "1c3b1ad6a2c0b7e1", "follower", "yes", "3.6.16", "Ready", "0", "node-a"},
				{"example-1", "4d2e7f1a90bb31c2", "follower", "no", "-", "Running", "1", "node-b"},
				{"example-2", "9f0a5e3c77d1e8a4", "leader", "yes", "3.6.15", "Ready", "0", "node-c"},
			}},
			Certificates: []Certificate{
				{Secret: "example-peer-tls", NotAfter: now.Add(89 * 24 * time.Hour), Subject: "CN=example-peer"},
				{Secret: "example-server-tls", NotAfter: ago(2 * time.Hour), Subject: "CN=example-server"},
				{Secret: "example-operator-tls", Problem: "you may not read this Secret"},
			},
			Backups: []Field{{"nightly succeeded", "2026-11-29T01:00:00Z revision 912 etcd/snap_c8e9e05c52164694d_v912_20261129T010000Z"}},
		},
		"myweb-paused-no-events": {
			Kind: "MyWeb", Namespace: "web", Name: "myweb-sample", Created: ago(90 * time.Second), Generation: 2, ObservedGeneration: 2, Paused: true,
			Conditions: []metav1.Condition{condition("Ready", "True", "Paused", "Paused by the annotation app-operator/paused: the operator takes no action; the last state it applied is kept", 30*time.Second)},
		},
		"memcached-change-not-seen-yet": {
			Kind: "Memcached", Namespace: "cache", Name: "memcached-sample", Created: ago(10 * time.Second), Generation: 2, ObservedGeneration: 1,
		},
	}
	for name, screen := range cases {
		t.Run(name, func(t *testing.T) {
			got := Render(screen, now)
			for i, l := range strings.Split(got, "\n") {
				if n := utf8.RuneCountInString(l); n > Width {
					t.Errorf("line %d is %d columns, more than %d: %q", i+1, n, Width, l)
				}
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./internal/plugin -run TestRenderScreens -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the screen differs from %s (-update rewrites it):\n%s", path, got)
			}
		})
	}
}

// clip keeps a line of Width columns, and cuts a longer one to Width
// with "…" last, counting runes, not bytes.
func TestClip(t *testing.T) {
	exact := strings.Repeat("é", Width)
	if got := clip(exact); got != exact {
		t.Errorf("a line of exactly %d columns was cut: %q", Width, got)
	}
	long := strings.Repeat("é", Width+5)
	got := clip(long)
	if utf8.RuneCountInString(got) != Width || !strings.HasSuffix(got, "…") {
		t.Errorf("clip of %d columns = %d columns %q, want %d ending in …", Width+5, utf8.RuneCountInString(got), got, Width)
	}
}
