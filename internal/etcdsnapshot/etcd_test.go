package etcdsnapshot

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/app-operator/app-operator/internal/snapshotstore/snapshottest"
)

// testEtcd is an etcd member running in the test's process.
type testEtcd struct {
	etcd      *embed.Etcd
	name      string
	clientURL string
	peerURL   string
	stop      func()
}

// freePort returns a loopback port that was free a moment ago.
var freePort = snapshottest.FreePort

// etcdConfig is the configuration of a one-member etcd in dataDir on free
// loopback ports.
func etcdConfig(t *testing.T, name, dataDir string) *embed.Config {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dataDir
	cfg.LogLevel = "error"
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(name)
	return cfg
}

// startEtcd starts cfg's member; with waitReady it waits until the member
// serves (has joined its cluster). The member stops with the test.
func startEtcd(t *testing.T, cfg *embed.Config, waitReady bool) *testEtcd {
	t.Helper()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	var once sync.Once
	stop := func() { once.Do(e.Close) }
	t.Cleanup(stop)
	if waitReady {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			t.Fatal("etcd did not become ready within 60s")
		}
	}
	return &testEtcd{etcd: e, name: cfg.Name, clientURL: cfg.AdvertiseClientUrls[0].String(), peerURL: cfg.AdvertisePeerUrls[0].String(), stop: stop}
}

// client is a client of the member, closed with the test.
func (e *testEtcd) client(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// put writes key=value and returns the revision it made.
func put(t *testing.T, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Put(ctx, key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// get reads key; found is false when it is absent.
func get(t *testing.T, cli *clientv3.Client, key string) (value string, found bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

// testContext is a context that ends with the test or after two minutes.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
