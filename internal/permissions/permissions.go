// Package permissions checks, when the manager starts, that its identity
// holds every permission its controllers need, so that a missing RBAC rule
// stops the operator loudly instead of leaving it running but unable to act.
//
// The rules are the ClusterRole generated from the controllers'
// +kubebuilder:rbac markers (role.yaml beside this file, written by `make
// manifests`), the same rules config/rbac and the Helm chart grant. Every
// resource they name is namespaced.
package permissions

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

//go:embed role.yaml
var roleYAML []byte

// Required returns the rules the controllers need.
func Required() ([]rbacv1.PolicyRule, error) {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(roleYAML, role); err != nil {
		return nil, fmt.Errorf("decode the embedded role: %w", err)
	}
	return role.Rules, nil
}

// Result is what Check found.
type Result struct {
	// Missing lists the required permissions the caller lacks, as
	// "verb group/resource in namespace NS" (or "cluster-wide") lines, sorted.
	Missing []string
	// AbsentNamespaces lists the watched namespaces that do not exist or are
	// being deleted and in which the caller lacks permissions (their Role
	// and RoleBinding go with them); they were left out of Missing, sorted.
	AbsentNamespaces []string
}

// Backoff paces the retries of one request after a transient error: 0.5 s,
// 1 s, 2 s, ... up to 8 s between attempts, until the context ends.
var Backoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 5, Cap: 8 * time.Second}

// attemptTimeout bounds a single request, so that a connection that hangs
// does not use up the whole deadline of the check.
const attemptTimeout = 15 * time.Second

// Check tells whether the caller holds every required rule in each of
// namespaces, or in every namespace when namespaces is empty.
//
// It sends one SelfSubjectRulesReview per namespace and matches the rules the
// API server returns (wildcards included) against the required ones. For the
// cluster-wide case the review goes to a namespace that cannot exist, so
// that it returns only what ClusterRoleBindings grant: that is what holds in
// every namespace. When an authorizer cannot list its rules (the review says
// incomplete, as a webhook authorizer does), each rule the review did not
// prove is asked about with a SelfSubjectAccessReview, so that nothing is
// reported missing that the caller holds.
//
// When rules are missing in a watched namespace, one GET of the Namespace
// tells whether it exists: a namespace that is gone (which takes its Role
// and RoleBinding with it) goes to AbsentNamespaces instead of Missing. An
// identity that may not read that Namespace gets its rules reported missing.
//
// Transient failures (the API server unreachable, overloaded or timing out)
// are retried with Backoff until ctx ends; Check then returns the last error.
// Errors that retrying cannot fix (such as a rejected request) return at once.
func Check(ctx context.Context, cs kubernetes.Interface, namespaces []string) (Result, error) {
	rules, err := Required()
	if err != nil {
		return Result{}, err
	}
	needs := expand(rules)
	var res Result
	if len(namespaces) == 0 {
		missing, err := checkScope(ctx, cs, "", needs)
		if err != nil {
			return Result{}, err
		}
		res.Missing = missing
		return res, nil
	}

	// Cluster-scoped resources are checked once, cluster-wide.
	var namespaced, cluster []need
	for _, n := range needs {
		if n.clusterScoped() {
			cluster = append(cluster, n)
		} else {
			namespaced = append(namespaced, n)
		}
	}
	needs = namespaced
	if len(cluster) > 0 {
		missing, err := checkScope(ctx, cs, "", cluster)
		if err != nil {
			return Result{}, err
		}
		res.Missing = missing
	}

	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, ns := range namespaces {
		g.Go(func() error {
			missing, err := checkScope(ctx, cs, ns, needs)
			if err != nil || len(missing) == 0 {
				return err
			}
			absent, err := namespaceAbsent(ctx, cs, ns)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if absent {
				res.AbsentNamespaces = append(res.AbsentNamespaces, ns)
			} else {
				res.Missing = append(res.Missing, missing...)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	sort.Strings(res.Missing)
	sort.Strings(res.AbsentNamespaces)
	return res, nil
}

// need is one verb on one resource (or subresource) of one group, on the
// object called name or, when name is empty, on every object.
type need struct {
	group, resource, subresource, verb, name string
}

// clusterScoped are the cluster-scoped resources the rules name, by group:
// a namespace's Role cannot grant them, so they are checked cluster-wide.
// The Helm chart's split of the rules names the same resources.
var clusterScoped = map[string][]string{"": {"nodes", "persistentvolumes"}, "scheduling.k8s.io": {"priorityclasses"}, "storage.k8s.io": {"storageclasses"}}

func (n need) clusterScoped() bool { return slices.Contains(clusterScoped[n.group], n.resource) }

// SplitByScope splits rules into those on namespaced resources and those
// on cluster-scoped ones, which only a ClusterRole can grant.
func SplitByScope(rules []rbacv1.PolicyRule) (namespaced, cluster []rbacv1.PolicyRule) {
	for _, r := range rules {
		if needs := expand([]rbacv1.PolicyRule{r}); len(needs) > 0 && needs[0].clusterScoped() {
			cluster = append(cluster, r)
		} else {
			namespaced = append(namespaced, r)
		}
	}
	return namespaced, cluster
}

func expand(rules []rbacv1.PolicyRule) []need {
	var out []need
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				resource, sub, _ := strings.Cut(resource, "/")
				for _, verb := range r.Verbs {
					for _, name := range names {
						out = append(out, need{group: group, resource: resource, subresource: sub, verb: verb, name: name})
					}
				}
			}
		}
	}
	return out
}

// checkScope returns the needs the caller lacks in namespace ns ("": in
// every namespace), as describe lines.
func checkScope(ctx context.Context, cs kubernetes.Interface, ns string, needs []need) ([]string, error) {
	reviewNS := ns
	if ns == "" {
		// A SelfSubjectRulesReview needs a namespace. In one that does not
		// exist no RoleBinding can exist, so the rules it returns are those
		// of ClusterRoleBindings alone.
		reviewNS = "app-operator-no-such-namespace-" + utilrand.String(8)
	}
	var review *authorizationv1.SelfSubjectRulesReview
	err := retry(ctx, "review the rules "+where(ns), func(ctx context.Context) error {
		var err error
		review, err = cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: reviewNS},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	var unproven []need
	for _, n := range needs {
		if !allowedByRules(review.Status.ResourceRules, n) {
			unproven = append(unproven, n)
		}
	}
	if len(unproven) > 0 && review.Status.Incomplete {
		if unproven, err = accessReviews(ctx, cs, ns, unproven); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, n := range unproven {
		missing = append(missing, describe(n, ns))
	}
	sort.Strings(missing)
	return missing, nil
}

// accessReviews asks about each need with a SelfSubjectAccessReview, several
// at a time, and returns those not allowed.
func accessReviews(ctx context.Context, cs kubernetes.Interface, ns string, needs []need) ([]need, error) {
	allowed := make([]bool, len(needs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, n := range needs {
		g.Go(func() error {
			return retry(ctx, "review "+describe(n, ns), func(ctx context.Context) error {
				review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
					Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: ns, Verb: n.verb, Group: n.group, Resource: n.resource, Subresource: n.subresource, Name: n.name,
					}},
				}, metav1.CreateOptions{})
				if err == nil {
					allowed[i] = review.Status.Allowed
				}
				return err
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []need
	for i, n := range needs {
		if !allowed[i] {
			out = append(out, n)
		}
	}
	return out, nil
}

// namespaceAbsent tells whether namespace ns does not exist or is being
// deleted. An identity that may not read it cannot tell: it gets false.
func namespaceAbsent(ctx context.Context, cs kubernetes.Interface, ns string) (bool, error) {
	absent := false
	err := retry(ctx, "get namespace "+ns, func(ctx context.Context) error {
		obj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			absent = true
			return nil
		case apierrors.IsForbidden(err):
			return nil
		case err != nil:
			return err
		}
		absent = obj.DeletionTimestamp != nil
		return nil
	})
	return absent, err
}

// retry calls fn until it succeeds, fails for good, or ctx ends, waiting
// between attempts as Backoff says.
func retry(ctx context.Context, what string, fn func(context.Context) error) error {
	var last error
	err := Backoff.DelayFunc().Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		attemptCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		last = fn(attemptCtx)
		switch {
		case last == nil:
			return true, nil
		case permanent(last):
			return false, last
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case last != nil && !errors.Is(err, last):
		// ctx ended while retrying: say why the attempts failed.
		return fmt.Errorf("%s: %w (still failing when giving up: %w)", what, last, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// permanent tells whether retrying the request cannot help: the API server
// answered and rejected it. Everything else (no connection, a timeout, an
// overloaded or failing server) is worth another attempt.
func permanent(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) ||
		apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}

// allowedByRules tells whether one of the rules grants n: on every object,
// or on the object n names (a rule limited to resourceNames grants only
// those), following RBAC's matching:
// "*" matches any group, resource or verb, and "*/sub" any resource's
// subresource sub.
func allowedByRules(rules []authorizationv1.ResourceRule, n need) bool {
	combined := n.resource
	if n.subresource != "" {
		combined += "/" + n.subresource
	}
	for _, r := range rules {
		if len(r.ResourceNames) > 0 && (n.name == "" || !slices.Contains(r.ResourceNames, n.name)) {
			continue
		}
		if !matches(r.Verbs, n.verb) || !matches(r.APIGroups, n.group) {
			continue
		}
		if slices.ContainsFunc(r.Resources, func(res string) bool {
			return res == rbacv1.ResourceAll || res == combined ||
				(n.subresource != "" && res == "*/"+n.subresource)
		}) {
			return true
		}
	}
	return false
}

func matches(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

func where(ns string) string {
	if ns == "" {
		return "cluster-wide"
	}
	return "in namespace " + ns
}

func describe(n need, ns string) string {
	group := cmp.Or(n.group, "core")
	resource := n.resource
	if n.subresource != "" {
		resource += "/" + n.subresource
	}
	if n.name != "" {
		resource += " " + n.name
	}
	return fmt.Sprintf("%s %s/%s %s", n.verb, group, resource, where(ns))
}
