package console

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// InfoReader reads one node's INFO: the only command the console sends
// to Redis.
type InfoReader interface {
	Info(ctx context.Context, addr string) (redisnode.Info, error)
}

// sampler reads the INFO of a cluster's nodes, at most once per node per
// refresh interval: a page or a client that asks more often is answered
// from what it kept.
type sampler struct {
	s *Server
	// mu is held while the nodes are asked, so that two pages asking at
	// once send one INFO per node.
	mu   sync.Mutex
	last map[string]sampled
}

// sampled is what a node said, and when.
type sampled struct {
	at     time.Time
	sample Sample
}

// samples returns what each node of o said within the refresh interval,
// asking those it has not heard from within it.
func (p *sampler) samples(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster) map[string]Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.s.now()
	names := NodeNames(o)
	var stale []string
	for _, name := range names {
		if l, ok := p.last[name]; !ok || now.Sub(l.at) >= p.s.cfg.Refresh {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		reader, err := p.reader(ctx, o)
		results := make([]Sample, len(stale))
		var wg sync.WaitGroup
		for i, name := range stale {
			if err != nil {
				results[i].Err = err
				continue
			}
			wg.Go(func() {
				in, err := reader.Info(ctx, p.s.cfg.NodeAddr(o, name))
				results[i] = Sample{Info: in, Err: err}
			})
		}
		wg.Wait()
		for i, name := range stale {
			p.last[name] = sampled{at: now, sample: results[i]}
		}
	}
	out := make(map[string]Sample, len(names))
	for _, name := range names {
		out[name] = p.last[name].sample
	}
	return out
}

// reader is the INFO reader of o's nodes: with the cluster's password,
// over TLS when spec.tls is set.
func (p *sampler) reader(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster) (InfoReader, error) {
	creds, err := p.s.auth.credentials(ctx)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if o.Spec.TLS != nil {
		if cfg, err = p.s.nodeTLS(ctx, o); err != nil {
			return nil, err
		}
	}
	if p.s.cfg.Dial != nil {
		return p.s.cfg.Dial(creds.password, cfg), nil
	}
	return redisnode.Client{Password: creds.password, TLS: cfg}, nil
}

// nodeTLS is the client configuration of o's nodes, from the Secret of
// their certificate (spec.tls.secretName, or the one the operator
// issues): its CA and, as the client's certificate, its own.
func (s *Server) nodeTLS(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster) (*tls.Config, error) {
	name := redisenterprisecluster.TLSSecretName(o.Name, o.Spec.TLS)
	var secret corev1.Secret
	if err := s.cfg.Client.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: name}, &secret); err != nil {
		return nil, fmt.Errorf("read the nodes' TLS Secret %s: %w", name, err)
	}
	cfg, err := tlssecret.ClientConfigOf(secret.Data, redisenterprisecluster.ServiceHost(o.Name, o.Namespace))
	if err != nil {
		return nil, fmt.Errorf("the nodes' TLS Secret %s: %w", name, err)
	}
	return cfg, nil
}

// DefaultNodeAddr is where a node is reached: its name through the
// cluster's headless Service, which the console's pod resolves in its
// namespace.
func DefaultNodeAddr(o *redisv1alpha1.RedisEnterpriseCluster, pod string) string {
	return redisnode.Addr(redisenterprisecluster.NodeHost(o.Name, pod), redisenterprisecluster.Port)
}
