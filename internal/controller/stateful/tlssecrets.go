package stateful

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// ReadSecret reads the Secret at key from the cache, which holds the
// Secrets the operator labels (those it makes), and from the API server
// when the cache has none: a user's Secret, or one just made that the
// cache has not seen yet.
func ReadSecret(ctx context.Context, cached, api client.Reader, key client.ObjectKey) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := cached.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		err = api.Get(ctx, key, s)
	}
	return s, err
}

// ReadTLSSecret reads (readSecret) the TLS Secret name that field names.
// A Secret that cannot serve is a *conditions.Failure naming the field, the
// Secret and the key at fault.
func ReadTLSSecret(ctx context.Context, cached, api client.Reader, namespace, field, name string) (*corev1.Secret, error) {
	s, err := ReadSecret(ctx, cached, api, client.ObjectKey{Namespace: namespace, Name: name})
	switch {
	case apierrors.IsNotFound(err):
		return nil, TLSSecretInvalid(field, name, errors.New("not found"))
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	if err := tlssecret.Check(s.Data); err != nil {
		return nil, TLSSecretInvalid(field, name, err)
	}
	return s, nil
}

func TLSSecretInvalid(field, name string, err error) *conditions.Failure {
	return &conditions.Failure{Reason: conditions.ReasonTLSSecretInvalid, Message: fmt.Sprintf("%s: Secret %s: %v", field, name, err)}
}
