// Package testenv runs the operator inside a test, against a cluster from
// package cluster, and counts the API requests it makes.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/app-operator/app-operator/internal/controller"
)

// requests records requests by namespace.
type requests struct {
	mu   sync.Mutex
	reqs map[string][]string
}

func (r *requests) add(ns, req string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reqs == nil {
		r.reqs = map[string][]string{}
	}
	r.reqs[ns] = append(r.reqs[ns], req)
}

// In returns the requests recorded so far in namespace ns.
func (r *requests) In(ns string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs[ns]...)
}

// Reset forgets every request recorded so far.
func (r *requests) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = nil
}

// record wraps cfg so that every request passes through each.
func record(cfg *rest.Config, each func(*http.Request)) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			each(req)
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// Mutations records the mutating requests (POST, PUT, PATCH, DELETE) a
// client makes, by namespace, as "METHOD path".
type Mutations struct{ requests }

var namespaceInPath = regexp.MustCompile(`/namespaces/([^/]+)/`)

// Wrap makes cfg record its mutating requests here.
func (m *Mutations) Wrap(cfg *rest.Config) *rest.Config {
	return record(cfg, func(req *http.Request) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			ns := ""
			if match := namespaceInPath.FindStringSubmatch(req.URL.Path); match != nil {
				ns = match[1]
			}
			m.add(ns, req.Method+" "+req.URL.Path)
		}
	})
}

// WaitQuiet waits until no mutating request has been recorded in namespace
// ns for the quiet period: a converging operator (or a status catching up
// with pods) settles first. It fails the test after timeout.
func (m *Mutations) WaitQuiet(t testing.TB, ns string, quiet, timeout time.Duration) {
	t.Helper()
	last, since := len(m.In(ns)), time.Now()
	Eventually(t, timeout, func() (bool, string) {
		if n := len(m.In(ns)); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= quiet, fmt.Sprintf("the operator keeps writing in %s: %d requests so far", ns, last)
	})
}

// Reads records the reads of single namespaced objects (GET without watch)
// a client makes, by namespace, as request URIs: whether the API server
// answered from its watch cache shows in the resourceVersion parameter.
type Reads struct{ requests }

// objectInPath matches the path of one namespaced object.
var objectInPath = regexp.MustCompile(`/namespaces/([^/]+)/[^/]+/[^/]+$`)

// Wrap makes cfg record its reads of single objects here.
func (r *Reads) Wrap(cfg *rest.Config) *rest.Config {
	return record(cfg, func(req *http.Request) {
		if match := objectInPath.FindStringSubmatch(req.URL.Path); match != nil && req.Method == http.MethodGet && req.URL.Query().Get("watch") == "" {
			r.add(match[1], req.URL.RequestURI())
		}
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Operator is the operator's manager running inside a test.
type Operator struct {
	// Mutations are the mutating requests the operator made.
	Mutations *Mutations
	// Reads are its reads of single objects from the API server (the
	// cache's lists and watches left out).
	Reads *Reads
	// Cache is the manager's cache, to look at what the operator holds.
	Cache  cache.Cache
	stop   func()
	killed *atomic.Bool
}

// Stop stops the manager and waits for it to exit.
func (o *Operator) Stop() { o.stop() }

// Kill stops the operator as SIGKILL would, without waiting: from the call
// on, none of its requests reaches the API server, so nothing it would
// write to finish or undo a step lands. Stop then waits for it to exit.
func (o *Operator) Kill() { o.killed.Store(true) }

// errKilled is what a killed operator's requests fail with.
var errKilled = errors.New("the operator was killed")

// StartOptions configure StartOperator.
type StartOptions struct {
	// Namespaces limits the cache, as the --watch-namespaces flag does.
	Namespaces []string
	// Options are the controllers' options, as the manager's flags give
	// them; zero fields take the operator's defaults.
	controller.Options
}

// StartOperator runs every controller against cfg until the test ends (or
// Stop is called), and waits for its caches to sync.
func StartOperator(t testing.TB, cfg *rest.Config, opts StartOptions) *Operator {
	t.Helper()
	muts, reads := &Mutations{}, &Reads{}
	cacheOpts := cache.Options{ByObject: controller.CacheByObject()}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	// Several managers in one test binary register the same controller names.
	skipNameValidation := true
	logs := &testWriter{}
	t.Cleanup(func() { logs.printIfFailed(t) })
	killed := &atomic.Bool{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if killed.Load() {
				return nil, errKilled
			}
			return rt.RoundTrip(req)
		})
	})
	mgr, err := ctrl.NewManager(reads.Wrap(muts.Wrap(cfg)), ctrl.Options{
		Scheme:                 controller.NewScheme(),
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 zap.New(zap.UseDevMode(true), zap.WriteTo(logs)),
		Controller:             config.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	if err := controller.SetupWithManager(mgr, opts.Options); err != nil {
		t.Fatalf("set up controllers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		t.Fatalf("operator caches did not sync: %v", <-done)
	}
	var once sync.Once
	o := &Operator{Mutations: muts, Reads: reads, Cache: mgr.GetCache(), killed: killed, stop: func() {
		once.Do(func() {
			cancel()
			err := <-done
			logs.close()
			if err != nil && !killed.Load() {
				t.Errorf("operator exited with an error: %v", err)
			}
		})
	}}
	t.Cleanup(o.Stop)
	return o
}

// NewNamespace creates a namespace for one test and deletes it afterwards.
func NewNamespace(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

// Create creates obj with c, failing the test if it cannot.
func Create(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// Update re-reads obj, applies mutate and writes it, retrying on conflicts.
func Update[T client.Object](t testing.TB, c client.Client, obj T, mutate func(T)) {
	t.Helper()
	Eventually(t, 10*time.Second, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		mutate(obj)
		if err := c.Update(context.Background(), obj); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// Eventually polls cond every 100ms until it returns true, failing the test
// with the last explanation after timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	if last, err := poll(timeout, cond); err != nil {
		t.Fatalf("condition not met within %s: %s", timeout, last)
	}
}

// poll polls cond every 100ms until it returns true or timeout passes,
// and returns its last explanation.
func poll(timeout time.Duration, cond func() (bool, string)) (string, error) {
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, why := cond()
		last = why
		return ok, nil
	})
	return last, err
}

// Sorted returns a sorted copy of s, for stable failure messages.
func Sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// logTail is how many of the manager's last log lines a failing test
// prints: enough to see what it did last, few enough that the test's own
// failure messages stay on the first screen of its output.
const logTail = 150

// testWriter keeps the manager's last log lines and prints them when the
// test fails, after the test's own messages. Lines written after the
// manager stopped are dropped: the test may be over by then.
type testWriter struct {
	mu      sync.Mutex
	lines   []string
	written int
	closed  bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.written++
		if len(w.lines) == logTail {
			w.lines = w.lines[1:]
		}
		w.lines = append(w.lines, strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}

// printIfFailed logs the kept lines when t has failed.
func (w *testWriter) printIfFailed(t testing.TB) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t.Failed() && w.written > 0 {
		t.Logf("the manager's last %d log lines (of %d):\n%s", len(w.lines), w.written, strings.Join(w.lines, "\n"))
	}
}

// ReconcileCount is how many passes the named controller has finished in
// this process, from controller-runtime's own metric.
func ReconcileCount(controllerName string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controllerName {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total, nil
}
