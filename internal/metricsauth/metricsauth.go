// Package metricsauth guards the manager's metrics endpoint as the API
// server guards its own paths: a request needs a bearer token the API server
// accepts (TokenReview), and the token's user needs the right to the path
// and verb (SubjectAccessReview), as controller-runtime's
// filters.WithAuthenticationAndAuthorization checks. That filter is built on
// k8s.io/apiserver's delegating authenticator and authorizer, which link
// cel-go and much of the API server into the manager: a far larger binary,
// whose code pages the manager then keeps resident, for two API calls
// (docs/performance.md has the figures). This one makes the same two calls
// with the typed clients the manager already links.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// AllowedFor is how long a token keeps the access it was granted
	// without asking the API server again: a revoked token or role stops
	// working within that time.
	AllowedFor = time.Minute
	// RefusedFor is how long a refusal is remembered, so that a scraper
	// without the right does not cost two API calls per scrape.
	RefusedFor = 30 * time.Second
	// reviewTimeout bounds each review request.
	reviewTimeout = 10 * time.Second
	// maxEntries bounds the remembered answers: tokens are chosen by the
	// callers, and an unbounded map would let anyone grow the manager's
	// memory.
	maxEntries = 1024
)

// Filter is a metricsserver.Options FilterProvider: it makes a filter that
// answers 401 to a request without a valid bearer token, 403 when the
// token's user may not use the request's verb on its path, 500 when the API
// server cannot tell, and otherwise serves the request.
//
// The manager's identity needs to create TokenReviews and
// SubjectAccessReviews (config/rbac/metrics_auth_role.yaml); the scraper's,
// the verb get on /metrics (config/rbac/metrics_reader_role.yaml).
func Filter(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationv1client.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1client.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, err
	}
	g := newGuard(authn.TokenReviews(), authz.SubjectAccessReviews())
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, msg, err := g.check(r.Context(), r)
			if err != nil {
				log.Error(err, msg)
			}
			if code != http.StatusOK {
				http.Error(w, msg, code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// guard checks requests and remembers its answers for a while.
type guard struct {
	tokens  authenticationv1client.TokenReviewInterface
	reviews authorizationv1client.SubjectAccessReviewInterface
	now     func() time.Time
	max     int

	mu      sync.Mutex
	answers map[answerKey]answer
}

// answerKey identifies a request for the cache: the token's digest (the
// token itself is not kept), the verb and the path.
type answerKey struct {
	token      [sha256.Size]byte
	verb, path string
}

type answer struct {
	code    int
	msg     string
	expires time.Time
}

func newGuard(tokens authenticationv1client.TokenReviewInterface, reviews authorizationv1client.SubjectAccessReviewInterface) *guard {
	return &guard{tokens: tokens, reviews: reviews, now: time.Now, max: maxEntries, answers: map[answerKey]answer{}}
}

// check returns the HTTP status r gets (200 to serve it) and the message of
// a refusal; err, when set, is why the API server could not tell, and the
// answer is not remembered.
func (g *guard) check(ctx context.Context, r *http.Request) (int, string, error) {
	token, ok := bearerToken(r)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	key := answerKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	now := g.now()
	g.mu.Lock()
	a, ok := g.answers[key]
	g.mu.Unlock()
	if ok && now.Before(a.expires) {
		return a.code, a.msg, nil
	}
	code, msg, err := g.review(ctx, token, key)
	if err != nil {
		return code, msg, err
	}
	ttl := RefusedFor
	if code == http.StatusOK {
		ttl = AllowedFor
	}
	g.remember(key, answer{code: code, msg: msg, expires: now.Add(ttl)})
	return code, msg, nil
}

// review asks the API server who the token belongs to, and whether that
// user may use the verb on the path.
func (g *guard) review(ctx context.Context, token string, key answerKey) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, "Authentication failed", fmt.Errorf("token review: %w", err)
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := g.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: key.path, Verb: key.verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
		return http.StatusInternalServerError, msg, fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, fmt.Sprintf("Authorization denied for user %s", user.Username), nil
	}
	return http.StatusOK, "", nil
}

// remember keeps a, dropping the expired answers when the cache is full,
// and every answer if that is not enough.
func (g *guard) remember(key answerKey, a answer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.answers) >= g.max {
		now := g.now()
		for k, old := range g.answers {
			if !now.Before(old.expires) {
				delete(g.answers, k)
			}
		}
		if len(g.answers) >= g.max {
			clear(g.answers)
		}
	}
	g.answers[key] = a
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}
