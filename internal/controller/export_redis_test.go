package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/app-operator/app-operator/internal/redisnode"
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
	x := &redisConnector{
		nodes:         func(string, *tls.Config, map[string]bool) redisnode.Nodes { return nodes },
		down:          &primaryDown{},
		clock:         clk,
		failoverAfter: failoverAfter,
		gauges:        newRedisGauges(reg),
		backups:       newRedisBackups("app-operator:test", reg),
	}
	return newReconciler(x.kind(), c, c, recorder, newEngine(c.Scheme(), Options{Clock: clk}))
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
	Info             redisnode.Info
}

// FakeRedis is Redis nodes by address, answering as their Info says and
// changing it as Promote and Follow would. Calls lists every command, in
// order, as "<command> <addr>[ <host>]".
type FakeRedis struct {
	mu    sync.Mutex
	Nodes map[string]*FakeRedisNode
	Calls []string
}

var errTimeout = errors.New("i/o timeout")

func (f *FakeRedis) node(addr, call string) (*FakeRedisNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.Nodes[addr]
	if !ok || n.Silent {
		return nil, fmt.Errorf("%s %s: %w", call, addr, errTimeout)
	}
	if call != "info" {
		f.Calls = append(f.Calls, call+" "+addr)
	}
	if n.Busy && call != "killscript" {
		return nil, redis.Error("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
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
	return n.Info, nil
}

// Promote implements redisnode.Nodes.
func (f *FakeRedis) Promote(_ context.Context, addr string) error {
	n, err := f.node(addr, "promote")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n.Info.Primary, n.Info.PrimaryHost, n.Info.LinkUp = true, "", false
	return nil
}

// Follow implements redisnode.Nodes.
func (f *FakeRedis) Follow(_ context.Context, addr, host string, _ int) error {
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

// PauseWrites implements redisnode.Nodes.
func (f *FakeRedis) PauseWrites(_ context.Context, addr string, _ time.Duration) error {
	_, err := f.node(addr, "pause")
	return err
}

// Unpause implements redisnode.Nodes.
func (f *FakeRedis) Unpause(_ context.Context, addr string) error {
	_, err := f.node(addr, "unpause")
	return err
}

// KillScript implements redisnode.Nodes.
func (f *FakeRedis) KillScript(_ context.Context, addr string) error {
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
