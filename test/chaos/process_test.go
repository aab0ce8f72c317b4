package chaos

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/app-operator/app-operator/test/testenv"
)

// write is one mutating request a manager process made.
type write struct {
	at     time.Time
	method string
	path   string
	code   int
	// body is what a status write sent (its first statusBodyShown bytes):
	// a write a test did not expect then says what changed.
	body string
}

// statusBodyShown is how much of a status write's body a write keeps.
const statusBodyShown = 2048

func (w write) String() string {
	s := fmt.Sprintf("%s %s %s -> %d", w.at.Format("15:04:05.000"), w.method, w.path, w.code)
	if w.body != "" {
		s += " " + w.body
	}
	return s
}

// lease reports whether w is a leader-election request.
func (w write) lease() bool { return strings.Contains(w.path, "/leases/") }

// proxy stands between one manager process and the API server: it adds the
// credential, and records every mutating request the process makes, with
// the time it arrived. Each process gets its own, so that every write is
// known to come from exactly one process.
type proxy struct {
	name       string
	kubeconfig string
	mu         sync.Mutex
	writes     []write
}

// newProxy starts a proxy to the test cluster and writes a kubeconfig that
// points at it.
func newProxy(t testing.TB, name string) *proxy {
	t.Helper()
	cfg := testCluster.Config()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{name: name}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1,
		// A process killed mid-request is expected here.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			rp.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		var body string
		if strings.HasSuffix(r.URL.Path, "/status") {
			sent, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(sent))
			body = string(sent[:min(len(sent), statusBodyShown)])
		}
		cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		rp.ServeHTTP(cw, r)
		p.mu.Lock()
		p.writes = append(p.writes, write{at: at, method: r.Method, path: r.URL.Path, code: cw.code, body: body})
		p.mu.Unlock()
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.kubeconfig = writeKubeconfig(t, srv.URL)
	return p
}

type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Writes returns the recorded requests that keep returns true for.
func (p *proxy) Writes(keep func(write) bool) []write {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []write
	for _, w := range p.writes {
		if keep == nil || keep(w) {
			out = append(out, w)
		}
	}
	return out
}

// work keeps the writes that change something: not leader election, and
// not the reviews of the start-up permission check, which are POSTs that
// store nothing.
func work(w write) bool {
	return !w.lease() && !strings.HasPrefix(w.path, "/apis/authorization.k8s.io/")
}

// in keeps the writes in namespace ns.
func in(ns string) func(write) bool {
	return func(w write) bool { return strings.Contains(w.path, "/namespaces/"+ns+"/") }
}

// managerArgs are the flags every manager process of a scenario gets: its
// namespace only, and no listener that two processes could both want.
func managerArgs(ns string, extra ...string) []string {
	return append([]string{
		"--watch-namespaces=" + ns,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		"--zap-log-level=info",
	}, extra...)
}

// startManager runs the manager binary through p, logging to a file named
// after p in the test's temporary folder (restarts append to it).
func startManager(t testing.TB, p *proxy, logDir string, args ...string) *testenv.ManagerProcess {
	t.Helper()
	return testenv.StartManager(t, managerBin, p.kubeconfig, filepath.Join(logDir, p.name+".log"), args...)
}

// waitQuiet waits until the process behind p has made no write in ns for
// quiet: a converged operator has nothing left to do. Only then is a Ready
// status known to be its verdict on the current state, not one left over
// from before a fault.
func waitQuiet(t testing.TB, p *proxy, ns string, quiet, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		ws := p.Writes(func(w write) bool { return work(w) && in(ns)(w) })
		if len(ws) == 0 {
			return true, ""
		}
		last := ws[len(ws)-1]
		return time.Since(last.at) >= quiet, "the operator keeps writing, last: " + last.String()
	})
}
