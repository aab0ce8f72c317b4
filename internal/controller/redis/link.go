package redis

import (
	"context"
	"crypto/tls"

	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// A cluster that gets spec.tls while it runs has, until its roll ends,
// nodes that serve TLS alone (their pods mount the certificate) beside
// nodes that serve plain connections alone. The operator reaches each in
// its own scheme, and points a node that serves TLS at a primary in the
// primary's scheme (tls-replication): the nodes' configuration says TLS,
// which a plain primary refuses.

// replicationScheme is what the operator asks of a node that serves TLS
// about its link to a primary (redisnode.Client).
type replicationScheme interface {
	ReplicationTLS(ctx context.Context, addr string) (bool, error)
	SetReplicationTLS(ctx context.Context, addr string, on bool) error
}

// plainNodes are the addresses of the pods that do not mount the
// certificate, reached without TLS though clientTLS is set; nil without
// TLS.
func plainNodes(clientTLS *tls.Config, pods []corev1.Pod) map[string]bool {
	if clientTLS == nil {
		return nil
	}
	var plain map[string]bool
	for i := range pods {
		if pods[i].Status.PodIP != "" && !redisenterprisecluster.MountsTLS(&pods[i]) {
			if plain == nil {
				plain = map[string]bool{}
			}
			plain[redisnode.Addr(pods[i].Status.PodIP, redisenterprisecluster.Port)] = true
		}
	}
	return plain
}

// replicationLink is how the node at addr, which serves TLS, reaches its
// primary; LinkUnknown when it does not say.
func replicationLink(ctx context.Context, redis redisnode.Nodes, addr string) redisenterprisecluster.Link {
	r, ok := redis.(replicationScheme)
	if !ok {
		return redisenterprisecluster.LinkUnknown
	}
	on, err := r.ReplicationTLS(ctx, addr)
	switch {
	case err != nil:
		return redisenterprisecluster.LinkUnknown
	case on:
		return redisenterprisecluster.LinkTLS
	}
	return redisenterprisecluster.LinkPlain
}

// follow makes n a replica of the primary at host (REPLICAOF), which
// serves TLS when primaryTLS is set. A node that serves TLS reaches it in
// its scheme; one that does not cannot reach a primary that does, and
// follows it once its pod is made again with the certificate.
func follow(ctx context.Context, redis redisnode.Nodes, n *redisNode, host string, primaryTLS bool) error {
	if r, ok := redis.(replicationScheme); ok && n.plan.TLS {
		if err := r.SetReplicationTLS(ctx, n.addr(), primaryTLS); err != nil {
			return err
		}
	}
	return redis.Follow(ctx, n.addr(), host, redisenterprisecluster.Port)
}
