package redis

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/controller/stateful"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// redisTLSField is the field that names a cluster's TLS Secret.
const redisTLSField = "spec.tls.secretName"

// redisTLS is a cluster's TLS as a pass read it: the certificate its
// Secret holds now, the CAs of the Secret's ca.crt (current) and those the
// nodes were given to trust until now (previous), and the client
// configuration of its nodes, which trusts both.
type redisTLS struct {
	leaf              *x509.Certificate
	current, previous []*x509.Certificate
	client            *tls.Config
}

// prepareTLS reads the Secret spec.tls names, issuing it first when it
// names none. A Secret that cannot serve is a *conditions.Failure naming
// the field. An issued CA missing while the cluster has nodes is a
// SecretMissing failure (see refuseToMake), returned with the TLS of the
// certificate issued before, when it is still there: the pass reaches
// the nodes with it.
func (ops *redisOps) prepareTLS(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (*redisTLS, error) {
	field, name := redisTLSField, redisenterprisecluster.TLSSecretName(o.Name, o.Spec.TLS)
	var missing *conditions.Failure
	if o.Spec.TLS.SecretName == "" {
		field = "spec.tls"
		caSecret := redisenterprisecluster.TLSCASecretName(o.Name)
		err := stateful.IssueTLS(ctx, ops.client, ops.apiReader, resources.OwnerOf(o, gvk), resources.Labels(redisenterprisecluster.Selector(o.Name)),
			caSecret, []stateful.IssuedCert{{Secret: name, CN: o.Name, Hosts: redisenterprisecluster.TLSHosts(o.Name, o.Namespace)}}, ops.clock.Now(),
			func(ctx context.Context) error { return ops.refuseToMake(ctx, o, caMissing(caSecret)) })
		f, ok := errors.AsType[*conditions.Failure](err)
		switch {
		case ok && f.Reason == redisv1alpha1.ReasonSecretMissing:
			missing = f
		case err != nil:
			// Refused (a quota, a policy, a webhook) or failed: the nodes
			// keep the certificate they have, and the pass goes on with it
			// for the steps that keep the data safe.
			missing = issueFailed(err)
		}
	}
	s, err := stateful.ReadTLSSecret(ctx, ops.client, ops.apiReader, o.Namespace, field, name)
	if err != nil {
		if missing != nil {
			return nil, missing
		}
		return nil, err
	}
	t, err := ops.tlsOf(ctx, o, field, s)
	if err != nil {
		return nil, err
	}
	if missing != nil {
		return t, missing
	}
	return t, nil
}

// issueFailed is the failure of a pass that could not issue or renew the
// certificate spec.tls asks the operator for: refused at admission, it is
// looked at again every recheck interval, as a refused child is.
func issueFailed(err error) *conditions.Failure {
	reason := conditions.ReasonApplyFailed
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		reason = conditions.ReasonApplyRejected
	}
	return &conditions.Failure{Reason: reason, Message: fmt.Sprintf("spec.tls: the operator could not issue or renew the nodes' certificate: %v; the nodes keep the one they have", err)}
}

// tlsOf is the TLS of s, the cluster's TLS Secret (named by field).
func (ops *redisOps) tlsOf(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, field string, s *corev1.Secret) (*redisTLS, error) {
	leaf, err := tlssecret.Leaf(s.Data)
	if err != nil {
		return nil, stateful.TLSSecretInvalid(field, s.Name, err)
	}
	current, err := tlssecret.CAs(s.Data[tlssecret.CAKey])
	if err != nil {
		return nil, stateful.TLSSecretInvalid(field, s.Name, err)
	}
	previous, err := ops.trusted(ctx, o)
	if err != nil {
		return nil, err
	}
	// The nodes are reached by IP; their certificate must name the
	// primary's Service, which clients reach them through.
	cfg, err := tlssecret.ClientConfigOf(s.Data, redisenterprisecluster.ServiceHost(o.Name, o.Namespace))
	if err != nil {
		return nil, stateful.TLSSecretInvalid(field, s.Name, err)
	}
	// A node serves the certificate of the CAs it was last given until it
	// reloads the Secret's files: the operator trusts both, the old ones
	// until every node serves a certificate of the new.
	cfg.RootCAs = tlssecret.Pool(slices.Concat(current, previous))
	if len(tlssecret.OtherCAs(previous, current)) > 0 {
		// A node that has not reloaded yet trusts the old CAs alone, and
		// would refuse the Secret's certificate, which the new one signed:
		// the operator presents none (tls-auth-clients optional), its
		// password authenticates it.
		cfg.Certificates = nil
	}
	return &redisTLS{leaf: leaf, current: current, previous: previous, client: cfg}, nil
}

// trusted returns the CAs the nodes were last given to trust: the trust
// bundle of the cluster's ConfigMap, as this operator last applied it.
// That bundle is the trust store: the ConfigMap is the cluster's own, already
// mounted by every node and written by the operator at each pass, and CA
// certificates are public, so keeping them there takes no new permission
// and no Secret.
func (ops *redisOps) trusted(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster) ([]*x509.Certificate, error) {
	cm, name := &corev1.ConfigMap{}, redisenterprisecluster.ConfigMapName(o.Name)
	err := ops.client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get ConfigMap %s: %w", name, err)
	}
	var keys []string
	for key := range cm.Data {
		if redisenterprisecluster.IsTrustKey(key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var out []*x509.Certificate
	for _, key := range keys {
		// A bundle that does not parse (edited by hand) trusts nothing.
		cas, err := tlssecret.CAs([]byte(cm.Data[key]))
		if err == nil {
			out = append(out, cas...)
		}
	}
	return out, nil
}

// trustBundle is the bundle of CAs the nodes are to load
// (redisenterprisecluster.Trust), given what nodes, as observed, serve.
func (t *redisTLS) trustBundle(nodes []redisNode) []byte {
	served := make([]*x509.Certificate, 0, len(nodes))
	for i := range nodes {
		served = append(served, nodes[i].tls.served)
	}
	return tlssecret.Bundle(redisenterprisecluster.Trust(t.current, t.previous, served))
}

// certificateReloader is what the operator asks of nodes that serve TLS
// (redisnode.Client with TLS).
type certificateReloader interface {
	Served(ctx context.Context, addr string) (*x509.Certificate, error)
	CAFile(ctx context.Context, addr string) (string, error)
	ReloadTLS(ctx context.Context, addr, certFile, keyFile, caFile string) error
}

// nodeTLS is what a node that serves TLS says of its TLS: the certificate
// it serves and the file it loaded its CAs from; zero where it was not
// asked or did not say.
type nodeTLS struct {
	served *x509.Certificate
	caFile string
}

// observeTLS asks the node at addr, which serves TLS, for its TLS.
func observeTLS(ctx context.Context, redis redisnode.Nodes, addr string) nodeTLS {
	r, ok := redis.(certificateReloader)
	if !ok {
		return nodeTLS{}
	}
	var out nodeTLS
	if c, err := r.Served(ctx, addr); err == nil {
		out.served = c
	}
	if f, err := r.CAFile(ctx, addr); err == nil {
		out.caFile = f
	}
	return out
}

// reloadCertificates has each node that presents another certificate
// than the Secret's, or that loaded other CAs than the trust bundle, read
// its files again: its certificate and key from the Secret, its CAs from
// the bundle. Redis reads them only at its start and on CONFIG SET; the
// kubelet rewrites them within a minute or so of a change, so a node told
// too early presents the old certificate still, or refuses the bundle it
// cannot find yet, and is told again at the next pass. A reload changes
// no data and drops no connection, so it is made at every pass, whatever
// the state of the cluster (a failover pending, no primary).
func (ops *redisOps) reloadCertificates(ctx context.Context, t *redisTLS, nodes []redisNode, redis redisnode.Nodes) {
	r, ok := redis.(certificateReloader)
	if t == nil || !ok {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	dir := redisenterprisecluster.TLSDir + "/"
	caFile := redisenterprisecluster.TrustPath(t.trustBundle(nodes))
	for i := range nodes {
		n := &nodes[i]
		addr := n.addr()
		// A node not reached with TLS in this pass is told at a later one.
		if addr == "" || !n.plan.TLS || n.tls.served == nil {
			continue
		}
		renewed := !bytes.Equal(n.tls.served.Raw, t.leaf.Raw)
		if !renewed && n.tls.caFile == caFile {
			continue
		}
		if err := r.ReloadTLS(ctx, addr, dir+tlssecret.CertKey, dir+tlssecret.KeyKey, caFile); err != nil {
			log.Info("Could not reload the node's certificate and CAs", "node", n.plan.Name, "caFile", caFile, "error", err.Error())
			continue
		}
		if now, err := r.Served(ctx, addr); err == nil && renewed && bytes.Equal(now.Raw, t.leaf.Raw) {
			log.Info("The node reloaded its renewed certificate", "node", n.plan.Name, "serial", t.leaf.SerialNumber.String())
		}
	}
}
