// Package console is the web console and REST API of one
// RedisEnterpriseCluster: a page that shows the cluster's nodes, primary,
// failovers and backups, refreshed live, with buttons to take a backup
// and to switch the primary over; and a REST API in the shape of Redis
// Enterprise's. It reads the resource, the cluster's Secret (its login)
// and the nodes' INFO; every action writes an annotation of the
// resource, which the operator acts on. It never sends Redis a command
// that changes anything. See docs/console.md.
package console

import (
	"cmp"
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
)

// Defaults of Config.
const (
	DefaultRefresh    = 5 * time.Second
	DefaultSessionTTL = 30 * time.Minute
)

// Config is what a Server serves and how.
type Config struct {
	// Namespace and Cluster name the RedisEnterpriseCluster served; its
	// Secret, named as the cluster, holds the login.
	Namespace, Cluster string
	// Client reads the resource and the Secrets, and patches the
	// resource.
	Client client.Client
	// Refresh is how often the page asks for a new overview, and how
	// long a node's INFO is kept.
	Refresh time.Duration
	// SessionTTL is how long a session lasts unused.
	SessionTTL time.Duration
	// CredentialsTTL is how long the Secret's credentials are used
	// before it is read again (DefaultCredentialsTTL when 0).
	CredentialsTTL time.Duration
	// NodeAddr is where a node is reached (DefaultNodeAddr when nil).
	NodeAddr func(o *redisv1alpha1.RedisEnterpriseCluster, pod string) string
	// Dial, when set, makes the INFO reader of the nodes from the
	// cluster's password and, with spec.tls, their TLS client
	// configuration; a redisnode.Client when nil.
	Dial func(password string, tls *tls.Config) InfoReader
	// Log is where logins, lockouts and actions are logged.
	Log logr.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server serves the console of one cluster.
type Server struct {
	cfg     Config
	auth    *auth
	sampler *sampler
	pages   *template.Template
}

//go:embed assets
var assets embed.FS

// New returns the server of cfg's cluster.
func New(cfg Config) *Server {
	cfg.Refresh = cmp.Or(cfg.Refresh, DefaultRefresh)
	cfg.SessionTTL = cmp.Or(cfg.SessionTTL, DefaultSessionTTL)
	cfg.CredentialsTTL = cmp.Or(cfg.CredentialsTTL, DefaultCredentialsTTL)
	if cfg.NodeAddr == nil {
		cfg.NodeAddr = DefaultNodeAddr
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, pages: template.Must(template.ParseFS(assets, "assets/*.html"))}
	s.auth = &auth{s: s, sessions: map[string]*session{}, clients: map[string]*attempts{}}
	s.sampler = &sampler{s: s, last: map[string]sampled{}}
	return s
}

func (s *Server) now() time.Time { return s.cfg.Now() }

// Overview reads the resource and its nodes' INFO (at most once per node
// per refresh interval) and returns the overview.
func (s *Server) Overview(ctx context.Context) (Overview, error) {
	o, err := s.cluster(ctx)
	if err != nil {
		return Overview{}, err
	}
	return BuildOverview(o, s.sampler.samples(ctx, o), s.cfg.Refresh, s.now()), nil
}

// UI is the console's handler: the login page and its assets for
// everyone, the rest for a session.
func (s *Server) UI() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.withSession(true, s.logout))
	mux.HandleFunc("GET /{$}", s.withSession(false, s.index))
	mux.HandleFunc("GET /overview", s.withSession(false, s.overviewJSON))
	mux.HandleFunc("POST /actions/backup", s.withSession(true, func(w http.ResponseWriter, r *http.Request, _ *session, _ string) {
		res, err := s.Backup(r.Context())
		s.actionAnswer(w, res, err)
	}))
	mux.HandleFunc("POST /actions/switchover", s.withSession(true, func(w http.ResponseWriter, r *http.Request, _ *session, _ string) {
		res, err := s.Switchover(r.Context(), r.PostFormValue("node"))
		s.actionAnswer(w, res, err)
	}))
	mux.HandleFunc("/", s.withSession(false, func(w http.ResponseWriter, r *http.Request, _ *session, _ string) {
		http.NotFound(w, r)
	}))
	return securityHeaders(mux)
}

// healthz answers the kubelet's readiness probe: it says only that the
// server answers, and needs no session.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// withSession runs h for a request with a live session (and, for an
// action, the session's CSRF token). Without one, a page redirects to
// the login page and anything else is answered 401.
func (s *Server) withSession(action bool, h func(http.ResponseWriter, *http.Request, *session, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, id := s.auth.session(r)
		switch {
		case sess == nil && r.Method == http.MethodGet && r.URL.Path == "/":
			http.Redirect(w, r, "/login", http.StatusSeeOther)
		case sess == nil:
			writeJSONError(w, http.StatusUnauthorized, "log in first")
		case action && !validCSRF(r, sess):
			writeJSONError(w, http.StatusForbidden, "the request does not carry the session's CSRF token")
		default:
			h(w, r, sess, id)
		}
	}
}

// loginPage shows the login form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if sess, _ := s.auth.session(r); sess != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, http.StatusOK, "")
}

func (s *Server) renderLogin(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = s.pages.ExecuteTemplate(w, "login.html", map[string]string{"Cluster": s.cfg.Cluster, "Namespace": s.cfg.Namespace, "Error": message})
}

// login checks the form's username and password and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	username, password := r.PostFormValue("username"), r.PostFormValue("password")
	err := s.auth.check(r.Context(), clientAddr(r), username, password)
	switch {
	case errors.Is(err, errLockedOut):
		s.renderLogin(w, http.StatusTooManyRequests, "Too many failed logins from your address: try again in a few minutes.")
		return
	case errors.Is(err, errWrongCredentials):
		s.renderLogin(w, http.StatusUnauthorized, "Wrong username or password.")
		return
	case err != nil:
		s.cfg.Log.Error(err, "Cannot check a login")
		s.renderLogin(w, http.StatusServiceUnavailable, "The console cannot read the cluster's credentials now.")
		return
	}
	id, err := s.auth.newSession(username)
	if err != nil {
		s.renderLogin(w, http.StatusInternalServerError, "The console cannot start a session.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	s.cfg.Log.Info("Logged in", "client", clientAddr(r), "username", username)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *session, id string) {
	s.auth.endSession(id)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// index is the console's page; the script fills it from the overview.
func (s *Server) index(w http.ResponseWriter, _ *http.Request, sess *session, _ string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = s.pages.ExecuteTemplate(w, "index.html", map[string]any{
		"Cluster": s.cfg.Cluster, "Namespace": s.cfg.Namespace, "CSRF": sess.csrf, "User": sess.username,
		"RefreshMillis": s.cfg.Refresh.Milliseconds(),
	})
}

// overviewJSON answers the overview.
func (s *Server) overviewJSON(w http.ResponseWriter, r *http.Request, _ *session, _ string) {
	ov, err := s.Overview(r.Context())
	if err != nil {
		s.cfg.Log.Error(err, "Cannot make the overview")
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ov)
}

// actionAnswer answers an action's result or error.
func (s *Server) actionAnswer(w http.ResponseWriter, res Result, err error) {
	if !s.actionFailed(w, err) {
		writeJSON(w, http.StatusAccepted, res)
	}
}

// actionFailed answers err, when an action was refused (its status and
// message) or failed (503), and reports whether it did.
func (s *Server) actionFailed(w http.ResponseWriter, err error) bool {
	var ae *ActionError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ae):
		writeJSONError(w, ae.Status, ae.Message)
	default:
		s.cfg.Log.Error(err, "Action failed")
		writeJSONError(w, http.StatusServiceUnavailable, err.Error())
	}
	return true
}

// maxBody is the largest request body read: a login form or an action's.
const maxBody = 64 << 10

// securityHeaders sets the headers every answer carries (only the
// console's own scripts and styles, never in a frame, nothing kept in a
// cache), and bounds the body read.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Strict-Transport-Security", "max-age=31536000")
		hd.Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		h.ServeHTTP(w, r)
	})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// APIError is an error's answer, in Redis Enterprise's shape.
type APIError struct {
	ErrorCode   string `json:"error_code"`
	Description string `json:"description"`
}

// writeJSONError answers an error.
func writeJSONError(w http.ResponseWriter, status int, description string) {
	writeJSON(w, status, APIError{ErrorCode: errorCode(status), Description: description})
}

// errorCode is the error_code of an answer's status.
func errorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusTooManyRequests:
		return "locked_out"
	default:
		return "unavailable"
	}
}
