package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// replicationInfo is what `redis-cli INFO replication` prints of a node.
func replicationInfo(primary bool, offset int64) string {
	role := "slave"
	if primary {
		role = "master"
	}
	return fmt.Sprintf("# Replication\r\nrole:%s\r\nmaster_replid:abc\r\nmaster_repl_offset:%d\r\n", role, offset)
}

// TestRedisLag checks the LAG column each node's INFO gives the members
// table: a replica's bytes behind the primary, "-" for the primary, "?"
// for a node that could not be asked or does not say the role the lag
// needs, and the redis-cli command of a cluster with and without TLS.
func TestRedisLag(t *testing.T) {
	tests := []struct {
		name    string
		tls     bool
		answers map[string]string // by pod; a pod left out fails
		want    []string          // the LAG column, by row
		wantCmd []string
		lagLine bool
	}{
		{
			name:    "should show each replica's bytes behind the primary",
			answers: map[string]string{"r-0": replicationInfo(true, 5000), "r-1": replicationInfo(false, 5000), "r-2": replicationInfo(false, 3568)},
			want:    []string{"-", "0 B", "1432 B"},
			wantCmd: []string{"redis-cli", "INFO", "replication"},
		},
		{
			name:    "should ask over TLS when the cluster has spec.tls",
			tls:     true,
			answers: map[string]string{"r-0": replicationInfo(true, 10), "r-1": replicationInfo(false, 10), "r-2": replicationInfo(false, 10)},
			want:    []string{"-", "0 B", "0 B"},
			wantCmd: []string{"redis-cli", "--tls", "--insecure", "INFO", "replication"},
		},
		{
			name:    "should show ? for a node that could not be asked, and say why",
			answers: map[string]string{"r-0": replicationInfo(true, 10), "r-1": replicationInfo(false, 10)},
			want:    []string{"-", "0 B", "?"},
			wantCmd: []string{"redis-cli", "INFO", "replication"},
			lagLine: true,
		},
		{
			name:    "should show ? for every replica when the primary could not be asked",
			answers: map[string]string{"r-1": replicationInfo(false, 10), "r-2": replicationInfo(false, 10)},
			want:    []string{"-", "?", "?"},
			wantCmd: []string{"redis-cli", "INFO", "replication"},
			lagLine: true,
		},
		{
			name:    "should show ? for a node that says it is a primary too",
			answers: map[string]string{"r-0": replicationInfo(true, 10), "r-1": replicationInfo(true, 4), "r-2": replicationInfo(false, 10)},
			want:    []string{"-", "?", "0 B"},
			wantCmd: []string{"redis-cli", "INFO", "replication"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &redisv1alpha1.RedisEnterpriseCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
			o.Status.Primary = "r-0"
			if tt.tls {
				o.Spec.TLS = &redisv1alpha1.TLS{}
			}
			s := &Screen{Members: &Table{Header: []string{"NODE", "ROLE"}, Rows: [][]string{{"r-0", "primary"}, {"r-1", "replica"}, {"r-2", "replica"}}}}
			exec := func(_ context.Context, namespace, pod, container string, command []string) (string, error) {
				if namespace != "ns" || container != "redis" || !slices.Equal(command, tt.wantCmd) {
					t.Errorf("exec in %s/%s container %s: %q, want container redis and %q", namespace, pod, container, command, tt.wantCmd)
				}
				if out, ok := tt.answers[pod]; ok {
					return out, nil
				}
				return "", errors.New("pods is forbidden")
			}
			RedisLag(context.Background(), exec, o, s)
			if got := s.Members.Header[len(s.Members.Header)-1]; got != "LAG" {
				t.Errorf("the last column is %q, want LAG", got)
			}
			got := make([]string, 0, len(s.Members.Rows))
			for _, row := range s.Members.Rows {
				got = append(got, row[len(row)-1])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("LAG column %q, want %q", got, tt.want)
			}
			hasLine := slices.ContainsFunc(s.Summary, func(f Field) bool { return f.Label == "Lag" && strings.Contains(f.Value, "forbidden") })
			if hasLine != tt.lagLine {
				t.Errorf("a Lag line saying why: %v, want %v (summary %v)", hasLine, tt.lagLine, s.Summary)
			}
		})
	}
}
