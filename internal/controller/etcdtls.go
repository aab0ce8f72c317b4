package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	"github.com/app-operator/app-operator/internal/etcd"
	"github.com/app-operator/app-operator/internal/resources/etcdcluster"
	"github.com/app-operator/app-operator/internal/status"
)

// ReasonTLSSecretInvalid: a Secret spec.TLS names is missing, lacks a key
// or holds no usable certificate; nothing is applied until it is fixed.
const ReasonTLSSecretInvalid = "TLSSecretInvalid"

// etcdTLSDialers keeps the dialer of each TLS cluster's operator
// certificate, so that its connections to the members outlive a pass and
// a renewed Secret (a new resourceVersion) replaces it.
type etcdTLSDialers struct {
	mu        sync.Mutex
	byCluster map[client.ObjectKey]tlsDialer
}

type tlsDialer struct {
	// secret is the uid and resourceVersion of the Secret it came from.
	secret string
	dialer *etcd.TLSDialer
}

// dialer returns the dialer of cluster key for the operator Secret s,
// made anew when s changed.
func (d *etcdTLSDialers) dialer(key client.ObjectKey, s *corev1.Secret, cfg func() (*tls.Config, error)) (etcd.Dialer, error) {
	version := string(s.UID) + "/" + s.ResourceVersion
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byCluster[key]; ok && e.secret == version {
		return e.dialer.Dial, nil
	}
	c, err := cfg()
	if err != nil {
		return nil, err
	}
	d.forgetLocked(key)
	if d.byCluster == nil {
		d.byCluster = map[client.ObjectKey]tlsDialer{}
	}
	e := tlsDialer{secret: version, dialer: etcd.NewTLSDialer(c)}
	d.byCluster[key] = e
	return e.dialer.Dial, nil
}

// forget drops the dialer of the cluster at key (deleted).
func (d *etcdTLSDialers) forget(key client.ObjectKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetLocked(key)
}

func (d *etcdTLSDialers) forgetLocked(key client.ObjectKey) {
	if e, ok := d.byCluster[key]; ok {
		e.dialer.Close()
		delete(d.byCluster, key)
	}
}

// tlsDialer reads the Secrets spec.TLS names, without the cache (the
// operator caches only the Secrets it labels), and returns the dialer of
// the operator's certificate. A Secret that cannot serve is a
// *status.Failure naming the field.
func (e *etcdOps) tlsDialer(ctx context.Context, o *etcdv1beta2.EtcdCluster) (etcd.Dialer, error) {
	static := o.Spec.TLS.Static
	for _, s := range []struct{ field, name string }{
		{"spec.TLS.static.member.serverSecret", static.Member.ServerSecret},
		{"spec.TLS.static.member.peerSecret", static.Member.PeerSecret},
	} {
		secret, err := e.tlsSecret(ctx, o.Namespace, s.field, s.name)
		if err != nil {
			return nil, err
		}
		if err := checkKeyPair(secret); err != nil {
			return nil, tlsSecretInvalid(s.field, s.name, err)
		}
	}
	const field = "spec.TLS.static.operatorSecret"
	secret, err := e.tlsSecret(ctx, o.Namespace, field, static.OperatorSecret)
	if err != nil {
		return nil, err
	}
	return e.dialers.dialer(client.ObjectKeyFromObject(o), secret, func() (*tls.Config, error) {
		cfg, err := etcd.ClientTLS(secret.Data[etcdv1beta2.TLSCertKey], secret.Data[etcdv1beta2.TLSKeyKey], secret.Data[etcdv1beta2.TLSCAKey],
			etcdcluster.ClientServerName(o.Name, o.Namespace))
		if err != nil {
			return nil, tlsSecretInvalid(field, static.OperatorSecret, err)
		}
		return cfg, nil
	})
}

// tlsSecret reads the Secret name that field names and checks it has the
// three keys.
func (e *etcdOps) tlsSecret(ctx context.Context, namespace, field, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	switch err := e.api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); {
	case apierrors.IsNotFound(err):
		return nil, tlsSecretInvalid(field, name, fmt.Errorf("not found"))
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	for _, key := range []string{etcdv1beta2.TLSCertKey, etcdv1beta2.TLSKeyKey, etcdv1beta2.TLSCAKey} {
		if len(s.Data[key]) == 0 {
			return nil, tlsSecretInvalid(field, name, fmt.Errorf("no key %q", key))
		}
	}
	return s, nil
}

// checkKeyPair checks that a member's Secret holds a certificate with its
// key, and a CA certificate.
func checkKeyPair(s *corev1.Secret) error {
	if _, err := tls.X509KeyPair(s.Data[etcdv1beta2.TLSCertKey], s.Data[etcdv1beta2.TLSKeyKey]); err != nil {
		return fmt.Errorf("%s and %s: %w", etcdv1beta2.TLSCertKey, etcdv1beta2.TLSKeyKey, err)
	}
	block, _ := pem.Decode(s.Data[etcdv1beta2.TLSCAKey])
	if block == nil {
		return fmt.Errorf("%s: no PEM certificate", etcdv1beta2.TLSCAKey)
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return fmt.Errorf("%s: %w", etcdv1beta2.TLSCAKey, err)
	}
	return nil
}

func tlsSecretInvalid(field, name string, err error) *status.Failure {
	return &status.Failure{Reason: ReasonTLSSecretInvalid, Message: fmt.Sprintf("%s: Secret %s: %v", field, name, err)}
}
