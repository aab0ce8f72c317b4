package stateful

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/engine"
	"github.com/app-operator/app-operator/internal/pki"
	"github.com/app-operator/app-operator/internal/resources"
	"github.com/app-operator/app-operator/internal/tlssecret"
)

// The certificates the operator issues for a data service whose TLS names
// no Secret: a CA of the cluster's own, made once and kept, and
// certificates it signs, issued anew a month before they expire.
const (
	issuedCAValidity  = 10 * 365 * 24 * time.Hour
	issuedValidity    = 90 * 24 * time.Hour
	issuedRenewBefore = 30 * 24 * time.Hour
)

// IssuedCert is one certificate to issue: the Secret it goes into, its
// common name and the names it is valid for.
type IssuedCert struct {
	Secret string
	CN     string
	Hosts  []string
}

// IssueTLS makes sure that the CA Secret caSecret exists and that each of
// certs holds a current certificate it signed (pki.CA.Current), issuing
// it where not. The Secrets carry the cluster's labels, and an owner
// reference that does not claim control: the garbage collector deletes
// them with the cluster, the cluster's pass never prunes them. Writes are
// made only where something is missing or due. mayMakeCA, when not nil,
// is asked before a CA is made (its Secret missing): an error it returns
// is IssueTLS's, and nothing is made.
func IssueTLS(ctx context.Context, c client.Client, api client.Reader, owner resources.Owner, labels map[string]string,
	caSecret string, certs []IssuedCert, now time.Time, mayMakeCA func(context.Context) error) error {
	ca, err := issuedCA(ctx, c, api, owner, labels, caSecret, now, mayMakeCA)
	if err != nil {
		return err
	}
	for _, want := range certs {
		s, err := ReadSecret(ctx, c, api, client.ObjectKey{Namespace: owner.Namespace, Name: want.Secret})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Secret %s: %w", want.Secret, err)
		}
		if err == nil && ca.Current(s.Data, want.CN, want.Hosts, now, issuedRenewBefore) {
			continue
		}
		pair, ierr := ca.Issue(want.CN, want.Hosts, now, issuedValidity)
		if ierr != nil {
			return fmt.Errorf("issue the certificate of Secret %s: %w", want.Secret, ierr)
		}
		if apierrors.IsNotFound(err) {
			if err := c.Create(ctx, issuedSecret(owner, labels, want.Secret, pair.Data()), client.FieldOwner(engine.FieldOwner("tls"))); err != nil {
				return fmt.Errorf("create Secret %s: %w", want.Secret, err)
			}
			continue
		}
		patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
		s.Data = pair.Data()
		if err := c.Patch(ctx, s, patch, client.FieldOwner(engine.FieldOwner("tls"))); err != nil {
			return fmt.Errorf("renew the certificate of Secret %s: %w", want.Secret, err)
		}
	}
	return nil
}

// issuedCA returns the CA of Secret name, made the first time (when
// mayMake allows).
func issuedCA(ctx context.Context, c client.Client, api client.Reader, owner resources.Owner, labels map[string]string, name string, now time.Time,
	mayMake func(context.Context) error) (*pki.CA, error) {
	s, err := ReadSecret(ctx, c, api, client.ObjectKey{Namespace: owner.Namespace, Name: name})
	switch {
	case err == nil:
		ca, err := pki.LoadCA(s.Data[tlssecret.CertKey], s.Data[tlssecret.KeyKey])
		if err != nil {
			return nil, fmt.Errorf("the CA of Secret %s: %w", name, err)
		}
		return ca, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	if mayMake != nil {
		if err := mayMake(ctx); err != nil {
			return nil, err
		}
	}
	ca, err := pki.NewCA(owner.Namespace+"/"+owner.Name, now, issuedCAValidity)
	if err != nil {
		return nil, err
	}
	secret := issuedSecret(owner, labels, name, map[string][]byte{tlssecret.CertKey: ca.PEM, tlssecret.KeyKey: ca.KeyPEM})
	if err := c.Create(ctx, secret, client.FieldOwner(engine.FieldOwner("tls"))); err != nil {
		// Another pass made it first: its CA is the one, read next pass.
		return nil, fmt.Errorf("create Secret %s: %w", name, err)
	}
	return ca, nil
}

func issuedSecret(owner resources.Owner, labels map[string]string, name string, data map[string][]byte) *corev1.Secret {
	ref := owner.SharedReference().WithBlockOwnerDeletion(true)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: owner.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: *ref.APIVersion, Kind: *ref.Kind, Name: *ref.Name, UID: *ref.UID,
				BlockOwnerDeletion: ref.BlockOwnerDeletion}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}
