package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/resources"
	rec "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// redisTLSField is the field that names a cluster's TLS Secret.
const redisTLSField = "spec.tls.secretName"

// redisTLS is a cluster's TLS as a pass read it: the certificate its
// Secret holds now, and the client configuration of its nodes.
type redisTLS struct {
	leaf   *x509.Certificate
	client *tls.Config
}

// lookTLS reads the Secret spec.tls names. A Secret that cannot serve is a
// *status.Failure naming the field.
func (x *redisConnector) lookTLS(ctx context.Context, o *redisv1alpha1.RedisEnterpriseCluster, gvk schema.GroupVersionKind) (*redisTLS, error) {
	field, name := redisTLSField, rec.TLSSecretName(o.Name, o.Spec.TLS)
	if o.Spec.TLS.SecretName == "" {
		field = "spec.tls"
		if err := issueTLS(ctx, x.client, x.apiReader, resources.OwnerOf(o, gvk), resources.Labels(rec.Selector(o.Name)),
			rec.TLSCASecretName(o.Name), []issuedCert{{secret: name, cn: o.Name, hosts: rec.TLSHosts(o.Name, o.Namespace)}}, x.clock.Now()); err != nil {
			return nil, err
		}
	}
	s, err := readTLSSecret(ctx, x.client, x.apiReader, o.Namespace, field, name)
	if err != nil {
		return nil, err
	}
	leaf, err := tlssecret.Leaf(s.Data)
	if err != nil {
		return nil, tlsSecretInvalid(field, s.Name, err)
	}
	// The nodes are reached by IP; their certificate must name the
	// primary's Service, which clients reach them through.
	cfg, err := tlssecret.ClientConfigOf(s.Data, rec.ServiceHost(o.Name, o.Namespace))
	if err != nil {
		return nil, tlsSecretInvalid(field, s.Name, err)
	}
	return &redisTLS{leaf: leaf, client: cfg}, nil
}

// certificateReloader is what the operator asks of nodes that serve TLS
// (redisnode.Client with TLS).
type certificateReloader interface {
	Served(ctx context.Context, addr string) (*x509.Certificate, error)
	ReloadTLS(ctx context.Context, addr, certFile, keyFile, caFile string) error
}

// reloadCertificates has each node that presents another certificate
// than the Secret's read its files again. Redis reads them only at its
// start and on CONFIG SET; the kubelet rewrites them within a minute or so
// of a renewal, so a node told too early presents the old one still, and
// is told again at the next look. A reload changes no data and drops no
// connection.
func (x *redisConnector) reloadCertificates(ctx context.Context, t *redisTLS, nodes []redisNode, redis redisnode.Nodes) {
	r, ok := redis.(certificateReloader)
	if t == nil || !ok {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	dir := rec.TLSDir + "/"
	for i := range nodes {
		addr := nodes[i].addr()
		if addr == "" {
			continue
		}
		served, err := r.Served(ctx, addr)
		if err != nil || bytes.Equal(served.Raw, t.leaf.Raw) {
			continue
		}
		if err := r.ReloadTLS(ctx, addr, dir+tlssecret.CertKey, dir+tlssecret.KeyKey, dir+tlssecret.CAKey); err != nil {
			log.Info("Could not reload the node's certificate", "node", nodes[i].plan.Name, "error", err.Error())
			continue
		}
		if now, err := r.Served(ctx, addr); err == nil && bytes.Equal(now.Raw, t.leaf.Raw) {
			log.Info("The node reloaded its renewed certificate", "node", nodes[i].plan.Name, "serial", t.leaf.SerialNumber.String())
		}
	}
}
