package etcd

import (
	"context"
	"crypto/tls"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/controller/stateful"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// tlsDialer reads the Secrets spec.TLS names (issuing them first when it
// names none) and returns the dialer of the operator's certificate, and
// the CAs the members are to trust. A Secret that cannot serve is a
// *conditions.Failure naming the field.
func (e *etcdOps) tlsDialer(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcd.Dialer, etcdcluster.Trust, error) {
	peer, server, operator := o.Spec.TLSSecrets(o.Name)
	peerField, serverField, field := "spec.TLS.static.member.peerSecret", "spec.TLS.static.member.serverSecret", "spec.TLS.static.operatorSecret"
	if o.Spec.TLS.Static == nil {
		const issued = "spec.TLS"
		peerField, serverField, field = issued, issued, issued
		peerHosts, serverHosts := etcdcluster.IssuedHosts(o.Name, o.Namespace)
		if err := stateful.IssueTLS(ctx, e.client, e.api, resources.OwnerOf(o, etcdv1beta2.GroupVersion.WithKind("EtcdCluster")),
			resources.Labels(etcdcluster.Selector(o.Name)), etcdv1beta2.TLSCASecret(o.Name), []stateful.IssuedCert{
				{Secret: peer, CN: o.Name + "-peer", Hosts: peerHosts},
				{Secret: server, CN: o.Name + "-server", Hosts: serverHosts},
				{Secret: operator, CN: "app-operator"},
			}, e.now(), nil); err != nil {
			return nil, etcdcluster.Trust{}, err
		}
	}
	serverSecret, err := stateful.ReadTLSSecret(ctx, e.client, e.api, o.Namespace, serverField, server)
	if err != nil {
		return nil, etcdcluster.Trust{}, err
	}
	peerSecret, err := stateful.ReadTLSSecret(ctx, e.client, e.api, o.Namespace, peerField, peer)
	if err != nil {
		return nil, etcdcluster.Trust{}, err
	}
	secret, err := stateful.ReadTLSSecret(ctx, e.client, e.api, o.Namespace, field, operator)
	if err != nil {
		return nil, etcdcluster.Trust{}, err
	}
	trust := etcdcluster.TrustOf(peerSecret.Data[tlssecret.CAKey], serverSecret.Data[tlssecret.CAKey])
	dial, err := e.dialers.dialer(client.ObjectKeyFromObject(o), secret, func() (*tls.Config, error) {
		cfg, err := tlssecret.ClientConfigOf(secret.Data, etcdcluster.ClientServerName(o.Name, o.Namespace))
		if err != nil {
			return nil, stateful.TLSSecretInvalid(field, operator, err)
		}
		return cfg, nil
	})
	return dial, trust, err
}

// now is the time of a pass: the clock's, when the kind has one.
func (e *etcdOps) now() time.Time {
	if e.clock == nil {
		return time.Now()
	}
	return e.clock.Now()
}
