package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/app-operator/app-operator/internal/controller/redis"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/redisnode"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// NewRedisReconciler returns the RedisEnterpriseCluster reconciler outside
// a manager, with nodes for Redis and clk for the failover window.
func NewRedisReconciler(c client.Client, nodes redisnode.Nodes, clk clock.PassiveClock, failoverAfter time.Duration) reconcile.Reconciler {
	return NewObservedRedisReconciler(c, nodes, clk, failoverAfter, prometheus.NewRegistry(), events.NewFakeRecorder(100))
}

// NewObservedRedisReconciler is NewRedisReconciler with its gauges
// registered in reg and its events sent to recorder.
func NewObservedRedisReconciler(c client.Client, nodes redisnode.Nodes, clk clock.PassiveClock, failoverAfter time.Duration,
	reg prometheus.Registerer, recorder events.EventRecorder) reconcile.Reconciler {
	k := redis.ClusterKind(redis.Options{
		Nodes:         func(string, *tls.Config, map[string]bool) redisnode.Nodes { return nodes },
		Clock:         clk,
		FailoverAfter: failoverAfter,
		Metrics:       reg,
		SnapshotImage: "app-operator:test",
	})
	return engine.NewReconciler(k, c, c, recorder, engine.NewEnv(c.Scheme(), engine.Options{Clock: clk}))
}

// FakeRedisNode is one node of FakeRedis.
type FakeRedisNode struct {
	// Silent makes every call to the node time out.
	Silent bool
	// FailFollow makes REPLICAOF fail.
	FailFollow bool
	// Busy makes every call but SCRIPT KILL answer BUSY, as a node
	// running a script past its busy threshold does; SCRIPT KILL ends it
	// unless Unkillable (a script that wrote).
	Busy, Unkillable bool
	// OnPromote, when set, runs as REPLICAOF NO ONE arrives, which then
	// fails: the operator stopped inside a step (it cancels the pass).
	OnPromote func()
	// CatchesUpAfter, when set, is how long after its primary's writes
	// pause (PauseWrites) the node reaches the primary's offset (Info says
	// it is one behind until then): a FAILOVER to it whose timeout is not
	// longer aborts, and the primary stays the primary.
	CatchesUpAfter time.Duration
	// ReplicationTLS is whether the node reaches its primary with TLS
	// (tls-replication), for a node whose pod serves TLS.
	ReplicationTLS bool
	Info           redisnode.Info
	// Config are the node's parameters (CONFIG GET, CONFIG SET); Refuse
	// the values CONFIG SET refuses, as "key=value"; Reports the form a
	// value set is reported in ("100mb" as "104857600"), by value.
	Config  map[string]string
	Refuse  map[string]bool
	Reports map[string]string
}

// FakeRedis is Redis nodes by address, answering as their Info says and
// changing it as Promote, Follow and Failover would. Calls lists every
// command, in order, as "<command> <addr>[ <host>]" ("failover <addr>
// <host>:<port>").
type FakeRedis struct {
	mu    sync.Mutex
	Nodes map[string]*FakeRedisNode
	Calls []string
	// Crash, when set, is asked before each command but INFO (by its
	// index among them, from 0, and its text): true stops the operator
	// there, inside its step: OnCrash runs (it cancels the pass) and the
	// command fails without taking effect, unless CrashAfter: then it
	// takes effect first (the operator stopped as the node answered).
	Crash      func(i int, call string) bool
	OnCrash    func()
	CrashAfter bool
	sent       int
	// crashing is set while a command that stops the operator after it
	// took effect runs.
	crashing bool
	// pausedAt is when PauseWrites last paused a node's writes.
	pausedAt time.Time
}

var errTimeout = errors.New("i/o timeout")

// answered ends a command that took effect: when it stops the operator
// (CrashAfter), OnCrash runs and the command fails all the same.
func (f *FakeRedis) answered(err *error) {
	f.mu.Lock()
	crash := f.crashing
	f.crashing = false
	f.mu.Unlock()
	if crash {
		if f.OnCrash != nil {
			f.OnCrash()
		}
		*err = context.Canceled
	}
}

func (f *FakeRedis) node(addr, call string) (*FakeRedisNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.Nodes[addr]
	if !ok || n.Silent {
		return nil, fmt.Errorf("%s %s: %w", call, addr, errTimeout)
	}
	if call != "info" && call != "get replicationtls" && call != "get config" {
		crash := f.Crash != nil && f.Crash(f.sent, call+" "+addr)
		f.sent++
		if crash && !f.CrashAfter {
			if f.OnCrash != nil {
				f.OnCrash()
			}
			return nil, context.Canceled
		}
		f.crashing = crash
		f.Calls = append(f.Calls, call+" "+addr)
	}
	if n.Busy && call != "killscript" {
		return nil, redigo.Error("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	}
	return n, nil
}

// Info implements redisnode.Nodes.
func (f *FakeRedis) Info(_ context.Context, addr string) (redisnode.Info, error) {
	n, err := f.node(addr, "info")
	if err != nil {
		return redisnode.Info{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	info := n.Info
	if n.CatchesUpAfter > 0 && !f.pausedAt.IsZero() && time.Since(f.pausedAt) < n.CatchesUpAfter {
		info.Offset--
	}
	return info, nil
}

// Promote implements redisnode.Nodes.
func (f *FakeRedis) Promote(_ context.Context, addr string) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "promote")
	if err != nil {
		return err
	}
	if n.OnPromote != nil {
		n.OnPromote()
		return context.Canceled
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n.Info.Primary, n.Info.PrimaryHost, n.Info.LinkUp = true, "", false
	return nil
}

// Follow implements redisnode.Nodes.
func (f *FakeRedis) Follow(_ context.Context, addr, host string, _ int) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "follow")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls[len(f.Calls)-1] += " " + host
	if n.FailFollow {
		return errors.New("ERR the node refused REPLICAOF")
	}
	n.Info.Primary, n.Info.PrimaryHost, n.Info.LinkUp, n.Info.LastIO = false, host, true, 0
	return nil
}

// Failover implements redisnode.Nodes as Redis's FAILOVER TO does: the
// primary at addr hands over to the replica it lists as host:port or,
// when that replica catches up later than timeout (CatchesUpAfter),
// stays the primary (redisnode.ErrFailoverAborted). It makes itself a
// replica of host, and the replica takes over; but a replica it lists at
// port 0 (one that serves TLS alone and reaches its primary in plain
// text) it cannot reach: that one stays a replica.
func (f *FakeRedis) Failover(_ context.Context, addr, host string, port int, timeout time.Duration) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "failover")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls[len(f.Calls)-1] += " " + redisnode.Addr(host, port)
	var target *FakeRedisNode
	for a, m := range f.Nodes {
		if h, _, _ := net.SplitHostPort(a); h == host && !m.Silent {
			target = m
		}
	}
	listed, ok := n.Info.ReplicaPorts[host]
	switch {
	case !n.Info.Primary:
		return redigo.Error("ERR FAILOVER is not valid when server is a replica.")
	case !ok || listed != port || target == nil:
		return redigo.Error("ERR FAILOVER target HOST and PORT is not a replica.")
	case target.CatchesUpAfter >= timeout:
		return redisnode.ErrFailoverAborted
	}
	n.Info.Primary, n.Info.PrimaryHost, n.Info.LinkUp, n.Info.LastIO = false, host, true, 0
	if port == 0 {
		n.Info.LinkUp, n.Info.LastIO = false, -1
	} else {
		target.Info.Primary, target.Info.PrimaryHost, target.Info.LinkUp = true, "", false
	}
	return nil
}

// PauseWrites implements redisnode.Nodes.
func (f *FakeRedis) PauseWrites(_ context.Context, addr string, _ time.Duration) (err error) {
	defer f.answered(&err)
	_, err = f.node(addr, "pause")
	if err == nil {
		f.mu.Lock()
		f.pausedAt = time.Now()
		f.mu.Unlock()
	}
	return err
}

// Unpause implements redisnode.Nodes.
func (f *FakeRedis) Unpause(_ context.Context, addr string) (err error) {
	defer f.answered(&err)
	_, err = f.node(addr, "unpause")
	return err
}

// ReplicationTLS says whether the node at addr reaches its primary with
// TLS, as redisnode.Client does of a node that serves TLS.
func (f *FakeRedis) ReplicationTLS(_ context.Context, addr string) (bool, error) {
	n, err := f.node(addr, "get replicationtls")
	if err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return n.ReplicationTLS, nil
}

// SetReplicationTLS sets whether the node at addr reaches its primary with
// TLS, as redisnode.Client does of a node that serves TLS; it is recorded
// as "replicationtls <addr> yes|no".
func (f *FakeRedis) SetReplicationTLS(_ context.Context, addr string, on bool) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "replicationtls")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls[len(f.Calls)-1] += map[bool]string{true: " yes", false: " no"}[on]
	n.ReplicationTLS = on
	return nil
}

// KillScript implements redisnode.Nodes.
func (f *FakeRedis) KillScript(_ context.Context, addr string) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "killscript")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !n.Busy:
		return nil
	case n.Unkillable:
		return redisnode.ErrUnkillable
	}
	n.Busy = false
	return nil
}

// ConfigGet returns a parameter of the node at addr, as
// redisnode.Client does.
func (f *FakeRedis) ConfigGet(_ context.Context, addr, key string) (string, error) {
	n, err := f.node(addr, "get config")
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return n.Config[key], nil
}

// ConfigSet sets a parameter of the node at addr, as redisnode.Client
// does; it is recorded as "config <addr> <key> <value>".
func (f *FakeRedis) ConfigSet(_ context.Context, addr, key, value string) (err error) {
	defer f.answered(&err)
	n, err := f.node(addr, "config")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Calls[len(f.Calls)-1] += " " + key + " " + value
	if n.Refuse[key+"="+value] {
		return redigo.Error("ERR CONFIG SET failed (possibly related to argument '" + key + "') - argument(s) must be one of the following")
	}
	if n.Config == nil {
		n.Config = map[string]string{}
	}
	n.Config[key] = value
	if r, ok := n.Reports[value]; ok {
		n.Config[key] = r
	}
	return nil
}

// SetBusy makes the node at addr busy or not.
func (f *FakeRedis) SetBusy(addr string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Nodes[addr].Busy = busy
}

// CallsMatching returns the calls that start with prefix.
func (f *FakeRedis) CallsMatching(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.Calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// Update changes the node at addr under the fake's lock.
func (f *FakeRedis) Update(addr string, change func(*FakeRedisNode)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.Nodes[addr])
}

// silent returns the error of a call to a node that does not answer.
func (f *FakeRedis) silent(addr, call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.Nodes[addr]; !ok || n.Silent {
		return fmt.Errorf("%s %s: %w", call, addr, errTimeout)
	}
	return nil
}

// NewRedisReconcilerReaching is NewRedisReconciler whose nodes are what
// nodes returns for the password and TLS configuration of each pass.
func NewRedisReconcilerReaching(c client.Client, nodes func(password string, cfg *tls.Config, plain map[string]bool) redisnode.Nodes,
	clk clock.PassiveClock, failoverAfter time.Duration) reconcile.Reconciler {
	k := redis.ClusterKind(redis.Options{
		Nodes:         nodes,
		Clock:         clk,
		FailoverAfter: failoverAfter,
		Metrics:       prometheus.NewRegistry(),
		SnapshotImage: "app-operator:test",
	})
	return engine.NewReconciler(k, c, c, events.NewFakeRecorder(100), engine.NewEnv(c.Scheme(), engine.Options{Clock: clk}))
}

// FakeTLSNode is the TLS of a node of FakeSecureRedis: the certificate it
// serves (and presents to its primary), the CAs it checks a peer's
// certificate against, and the file it loaded them from.
type FakeTLSNode struct {
	Serves *x509.Certificate
	Trusts []*x509.Certificate
	CAFile string
}

// FakeSecureRedis is FakeRedis reached as a client reaches Redis: with
// the password, when Password is set, and with TLS for the nodes of TLS.
// A node of TLS refuses a client that does not trust its certificate (a
// failed handshake) and one that presents a certificate its CAs do not
// verify (tls-auth-clients optional); CONFIG SET of its TLS files
// (ReloadTLS) loads them from Files, the files the kubelet wrote into
// every node's pod, and fails, keeping what the node had, where one is
// missing.
type FakeSecureRedis struct {
	*FakeRedis
	Password string
	tlsMu    sync.Mutex
	TLS      map[string]*FakeTLSNode
	Files    func(path string) ([]byte, bool)
}

// Reach returns the nodes as a client of password and cfg reaches them
// (the operator's redis.Options.Nodes).
func (f *FakeSecureRedis) Reach(password string, cfg *tls.Config, plain map[string]bool) redisnode.Nodes {
	return &fakeSecureClient{f: f, password: password, cfg: cfg, plain: plain}
}

// Node returns a copy of the TLS of the node at addr.
func (f *FakeSecureRedis) Node(addr string) FakeTLSNode {
	f.tlsMu.Lock()
	defer f.tlsMu.Unlock()
	return *f.TLS[addr]
}

type fakeSecureClient struct {
	f        *FakeSecureRedis
	password string
	cfg      *tls.Config
	plain    map[string]bool
}

var _ redisnode.Nodes = (*fakeSecureClient)(nil)

// connect is the handshake and the authentication of a call to addr.
func (c *fakeSecureClient) connect(addr, call string) error {
	if err := c.f.silent(addr, call); err != nil {
		return err
	}
	c.f.tlsMu.Lock()
	n := c.f.TLS[addr]
	c.f.tlsMu.Unlock()
	withTLS := c.cfg != nil && !c.plain[addr]
	switch {
	case n == nil && withTLS:
		return fmt.Errorf("%s %s: tls: first record does not look like a TLS handshake", call, addr)
	case n != nil && !withTLS:
		return fmt.Errorf("%s %s: EOF (the node serves TLS alone)", call, addr)
	case n != nil:
		c.f.tlsMu.Lock()
		serves, trusts := n.Serves, slices.Clone(n.Trusts)
		c.f.tlsMu.Unlock()
		if _, err := serves.Verify(x509.VerifyOptions{Roots: c.cfg.RootCAs, DNSName: c.cfg.ServerName,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return fmt.Errorf("%s %s: tls: failed to verify certificate: %w", call, addr, err)
		}
		if len(c.cfg.Certificates) > 0 {
			leaf, err := x509.ParseCertificate(c.cfg.Certificates[0].Certificate[0])
			if err != nil {
				return err
			}
			pool := x509.NewCertPool()
			for _, ca := range trusts {
				pool.AddCert(ca)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				return fmt.Errorf("%s %s: remote error: tls: unknown certificate authority", call, addr)
			}
		}
	}
	if c.f.Password != "" && c.password != c.f.Password {
		return redigo.Error("WRONGPASS invalid username-password pair or user is disabled.")
	}
	return nil
}

// Info implements redisnode.Nodes.
func (c *fakeSecureClient) Info(ctx context.Context, addr string) (redisnode.Info, error) {
	if err := c.connect(addr, "info"); err != nil {
		return redisnode.Info{}, err
	}
	return c.f.Info(ctx, addr)
}

// Promote implements redisnode.Nodes.
func (c *fakeSecureClient) Promote(ctx context.Context, addr string) error {
	if err := c.connect(addr, "promote"); err != nil {
		return err
	}
	return c.f.Promote(ctx, addr)
}

// Failover implements redisnode.Nodes.
func (c *fakeSecureClient) Failover(ctx context.Context, addr, host string, port int, timeout time.Duration) error {
	if err := c.connect(addr, "failover"); err != nil {
		return err
	}
	return c.f.Failover(ctx, addr, host, port, timeout)
}

// Follow implements redisnode.Nodes.
func (c *fakeSecureClient) Follow(ctx context.Context, addr, host string, port int) error {
	if err := c.connect(addr, "follow"); err != nil {
		return err
	}
	return c.f.Follow(ctx, addr, host, port)
}

// PauseWrites implements redisnode.Nodes.
func (c *fakeSecureClient) PauseWrites(ctx context.Context, addr string, d time.Duration) error {
	if err := c.connect(addr, "pause"); err != nil {
		return err
	}
	return c.f.PauseWrites(ctx, addr, d)
}

// Unpause implements redisnode.Nodes.
func (c *fakeSecureClient) Unpause(ctx context.Context, addr string) error {
	if err := c.connect(addr, "unpause"); err != nil {
		return err
	}
	return c.f.Unpause(ctx, addr)
}

// KillScript implements redisnode.Nodes.
func (c *fakeSecureClient) KillScript(ctx context.Context, addr string) error {
	if err := c.connect(addr, "killscript"); err != nil {
		return err
	}
	return c.f.KillScript(ctx, addr)
}

// Served is redisnode.Client's.
func (c *fakeSecureClient) Served(_ context.Context, addr string) (*x509.Certificate, error) {
	if c.cfg == nil {
		return nil, errors.New("not a TLS client")
	}
	if err := c.connect(addr, "served"); err != nil {
		return nil, err
	}
	return c.f.Node(addr).Serves, nil
}

// CAFile is redisnode.Client's.
func (c *fakeSecureClient) CAFile(_ context.Context, addr string) (string, error) {
	if err := c.connect(addr, "cafile"); err != nil {
		return "", err
	}
	return c.f.Node(addr).CAFile, nil
}

// ReloadTLS is redisnode.Client's: the call is recorded as
// "reload <addr>".
func (c *fakeSecureClient) ReloadTLS(_ context.Context, addr, certFile, _, caFile string) error {
	if err := c.connect(addr, "reload"); err != nil {
		return err
	}
	if _, err := c.f.node(addr, "reload"); err != nil {
		return err
	}
	failed := redigo.Error("ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.")
	certPEM, ok := c.f.Files(certFile)
	caPEM, okCA := c.f.Files(caFile)
	if !ok || !okCA {
		return failed
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return failed
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return failed
	}
	cas, err := tlssecret.CAs(caPEM)
	if err != nil || len(cas) == 0 {
		return failed
	}
	c.f.tlsMu.Lock()
	defer c.f.tlsMu.Unlock()
	n := c.f.TLS[addr]
	n.Serves, n.Trusts, n.CAFile = leaf, cas, caFile
	return nil
}
