// Package permissions checks, when the manager starts, that its identity
// holds every permission its controllers need, so that a missing RBAC rule
// stops the operator loudly instead of leaving it running but unable to act.
//
// The rules are the ClusterRole generated from the controllers'
// +kubebuilder:rbac markers (role.yaml beside this file, written by `make
// manifests`), the same rules config/rbac and the Helm chart grant.
package permissions

import (
	"context"
	_ "embed"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
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

// Missing asks the API server, with one SelfSubjectAccessReview per group,
// resource and verb (several at a time), whether the caller holds every
// required rule in each namespace (one "" entry means cluster-wide), and
// returns the ones it lacks as "verb group/resource in namespace" lines,
// sorted.
func Missing(ctx context.Context, authz authorizationclient.SelfSubjectAccessReviewsGetter, namespaces []string) ([]string, error) {
	rules, err := Required()
	if err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var checks []*authorizationv1.ResourceAttributes
	for _, ns := range namespaces {
		for _, r := range rules {
			for _, group := range r.APIGroups {
				for _, resource := range r.Resources {
					for _, verb := range r.Verbs {
						checks = append(checks, &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource})
					}
				}
			}
		}
	}

	allowed := make([]bool, len(checks))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, attrs := range checks {
		g.Go(func() error {
			review, err := authz.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("review %s: %w", describe(attrs), err)
			}
			allowed[i] = review.Status.Allowed
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var missing []string
	for i, ok := range allowed {
		if !ok {
			missing = append(missing, describe(checks[i]))
		}
	}
	sort.Strings(missing)
	return missing, nil
}

func describe(a *authorizationv1.ResourceAttributes) string {
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	group := a.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s/%s %s", a.Verb, group, a.Resource, where)
}
