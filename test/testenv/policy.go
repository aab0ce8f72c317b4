package testenv

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DenyByPolicy installs, with c, a ValidatingAdmissionPolicy called name,
// and its binding, that refuses the requests of rule for which expression
// is false, with message. It returns a function that removes both (also
// run when the test ends); the caller waits for the API server to enforce
// it.
func DenyByPolicy(t testing.TB, c client.Client, name string, rule admissionregistrationv1.RuleWithOperations, expression, message string) func() {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule}}},
			Validations:      []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Create(t, c, policy)
	Create(t, c, binding)
	remove := func() {
		_ = c.Delete(context.Background(), binding)
		_ = c.Delete(context.Background(), policy)
	}
	t.Cleanup(remove)
	return remove
}
