package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The rules of logins.
const (
	// MaxFailures failed logins from one client address within
	// FailureWindow lock it out for Lockout: every login it tries then
	// is refused, with the right password too.
	MaxFailures   = 5
	FailureWindow = 10 * time.Minute
	Lockout       = 5 * time.Minute
	// SessionLifetime is the longest a session lasts, used or not.
	SessionLifetime = 8 * time.Hour
	// DefaultCredentialsTTL is how long the credentials read from the
	// cluster's Secret are used before it is read again: a rotated
	// password applies within it.
	DefaultCredentialsTTL = 10 * time.Second
	// SessionCookie is the cookie that holds a session.
	SessionCookie = "redis_console_session"
	// CSRFHeader is the header an action carries the session's token
	// in (a form carries it in the field csrf).
	CSRFHeader = "X-CSRF-Token"
)

// errLockedOut is a login refused because its client failed too often.
var errLockedOut = errors.New("too many failed logins from this address: try again later")

// errWrongCredentials is a login with a wrong username or password.
var errWrongCredentials = errors.New("wrong username or password")

// credentials are the username and password of the cluster's Secret.
type credentials struct {
	username, password string
}

// auth checks logins against the cluster's Secret, keeps the sessions in
// memory and locks out the clients that fail too often.
type auth struct {
	s *Server

	mu       sync.Mutex
	creds    credentials
	readAt   time.Time
	sessions map[string]*session
	clients  map[string]*attempts
}

// session is one logged-in browser.
type session struct {
	username         string
	csrf             string
	created, lastUse time.Time
}

// attempts is the failed logins of one client address.
type attempts struct {
	failures    []time.Time
	lockedUntil time.Time
}

// credentials returns the username and password of the cluster's Secret,
// read again when the last read is older than the credentials' TTL.
func (a *auth) credentials(ctx context.Context) (credentials, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.s.now()
	if !a.readAt.IsZero() && now.Sub(a.readAt) < a.s.cfg.CredentialsTTL {
		return a.creds, nil
	}
	var secret corev1.Secret
	if err := a.s.cfg.Client.Get(ctx, types.NamespacedName{Namespace: a.s.cfg.Namespace, Name: a.s.cfg.Cluster}, &secret); err != nil {
		return credentials{}, fmt.Errorf("read the cluster's Secret %s: %w", a.s.cfg.Cluster, err)
	}
	c := credentials{username: string(secret.Data["username"]), password: string(secret.Data["password"])}
	if c.username == "" || c.password == "" {
		return credentials{}, fmt.Errorf("the cluster's Secret %s has no username or no password", a.s.cfg.Cluster)
	}
	a.creds, a.readAt = c, now
	return c, nil
}

// check checks a login from the client at addr: errLockedOut while the
// address is locked out, errWrongCredentials for a wrong username or
// password (counted against the address), another error when the
// Secret cannot be read.
func (a *auth) check(ctx context.Context, addr, username, password string) error {
	if a.lockedOut(addr) {
		return errLockedOut
	}
	creds, err := a.credentials(ctx)
	if err != nil {
		return err
	}
	// Compare digests, so that the time taken says nothing of the length
	// either; both are compared, whichever differs.
	u := subtle.ConstantTimeCompare(digest(username), digest(creds.username))
	p := subtle.ConstantTimeCompare(digest(password), digest(creds.password))
	if u&p == 1 {
		return nil
	}
	a.s.cfg.Log.Info("Login failed", "client", addr, "username", username)
	a.fail(addr)
	return errWrongCredentials
}

func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// lockedOut reports whether the client at addr is locked out.
func (a *auth) lockedOut(addr string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.clients[addr]
	return c != nil && a.s.now().Before(c.lockedUntil)
}

// fail counts a failed login of the client at addr, and locks it out at
// the MaxFailures-th within FailureWindow.
func (a *auth) fail(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.s.now()
	for k, c := range a.clients {
		if now.After(c.lockedUntil) && (len(c.failures) == 0 || now.Sub(c.failures[len(c.failures)-1]) > FailureWindow) {
			delete(a.clients, k)
		}
	}
	c := a.clients[addr]
	if c == nil {
		c = &attempts{}
		a.clients[addr] = c
	}
	recent := c.failures[:0]
	for _, t := range c.failures {
		if now.Sub(t) < FailureWindow {
			recent = append(recent, t)
		}
	}
	c.failures = append(recent, now)
	if len(c.failures) >= MaxFailures {
		c.lockedUntil, c.failures = now.Add(Lockout), nil
		a.s.cfg.Log.Info("Client locked out after failed logins", "client", addr, "failures", MaxFailures, "for", Lockout)
	}
}

// newSession starts a session for username and returns its ID.
func (a *auth) newSession(username string) (string, error) {
	id, err := randomToken()
	if err != nil {
		return "", err
	}
	csrf, err := randomToken()
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.s.now()
	for k, s := range a.sessions {
		if a.expired(s, now) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = &session{username: username, csrf: csrf, created: now, lastUse: now}
	return id, nil
}

// session returns the live session of r's cookie, marking it used; nil
// when r has none, or one this process did not start or that expired.
func (a *auth) session(r *http.Request) (*session, string) {
	cookie, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[cookie.Value]
	now := a.s.now()
	if s == nil {
		return nil, ""
	}
	if a.expired(s, now) {
		delete(a.sessions, cookie.Value)
		return nil, ""
	}
	s.lastUse = now
	return s, cookie.Value
}

// expired reports whether s expired at now: idle for the session TTL, or
// older than SessionLifetime.
func (a *auth) expired(s *session, now time.Time) bool {
	return now.Sub(s.lastUse) >= a.s.cfg.SessionTTL || now.Sub(s.created) >= SessionLifetime
}

// endSession ends the session id.
func (a *auth) endSession(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, id)
}

// validCSRF reports whether r carries s's token, in its header or its
// form.
func validCSRF(r *http.Request, s *session) bool {
	token := r.Header.Get(CSRFHeader)
	if token == "" {
		token = r.PostFormValue("csrf")
	}
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

// randomToken is 32 random bytes, URL-safe base64.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// clientAddr is the address a request came from, without its port: what
// failed logins are counted by.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
