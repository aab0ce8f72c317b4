package etcd

import (
	"crypto/tls"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/etcd"
)

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
