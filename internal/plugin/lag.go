package plugin

import (
	"context"
	"fmt"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// Exec runs command in a container of a pod and returns what it printed
// on its standard output.
type Exec func(ctx context.Context, namespace, pod, container string, command []string) (string, error)

// RedisLag adds to the members table of s, a RedisEnterpriseCluster's
// screen, each replica's lag behind the primary in bytes of the
// replication stream: the primary's offset less the replica's, as each
// node's `INFO replication` says, read by redis-cli in the node's own
// container (the container holds the password in REDISCLI_AUTH, so none
// goes through the exec). It only reads. A node that cannot be asked (no
// pods/exec permission, a pod not running) shows "?", and a Lag line of
// the summary says why.
func RedisLag(ctx context.Context, exec Exec, o *redisv1alpha1.RedisEnterpriseCluster, s *Screen) {
	if s.Members == nil {
		return
	}
	command := []string{"redis-cli", "INFO", "replication"}
	if o.Spec.TLS != nil {
		// TLS alone on the port; the node's certificate names its
		// Services, not the loopback address the client dials.
		command = []string{"redis-cli", "--tls", "--insecure", "INFO", "replication"}
	}
	infos := map[string]redisnode.Info{}
	var failed error
	for _, row := range s.Members.Rows {
		out, err := exec(ctx, o.Namespace, row[0], redisenterprisecluster.ContainerName, command)
		if err != nil {
			failed = err
			continue
		}
		infos[row[0]] = redisnode.ParseInfo(out)
	}
	s.Members.Header = append(s.Members.Header, "LAG")
	for i, row := range s.Members.Rows {
		s.Members.Rows[i] = append(row, lagColumn(o.Status.Primary, row[0], infos))
	}
	if failed != nil {
		s.Summary = append(s.Summary, Field{"Lag", fmt.Sprintf("? where a node could not be asked: %v", failed)})
	}
}

// lagColumn is the lag of node behind primary, from the nodes' INFO: "-"
// for the primary, "?" when either did not answer, the primary does not
// say it is one or the node says it is a primary too.
func lagColumn(primary, node string, infos map[string]redisnode.Info) string {
	if node == primary {
		return "-"
	}
	p, okP := infos[primary]
	n, okN := infos[node]
	if !okP || !okN || !p.Primary || n.Primary {
		return "?"
	}
	return fmt.Sprintf("%d B", max(p.Offset-n.Offset, 0))
}
