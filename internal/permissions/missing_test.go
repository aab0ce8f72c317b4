package permissions

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/app-operator/app-operator/test/cluster"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	c, err := cluster.Start(context.Background(), cluster.Options{Profile: cluster.APIOnly})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the local cluster:", err)
		os.Exit(1)
	}
	testCluster = c
	code := m.Run()
	_ = c.Stop()
	if code == 0 {
		_ = c.RemoveDir()
	}
	os.Exit(code)
}

// TestMissingNamesExactlyTheRuleNotGranted binds a ServiceAccount to the
// required rules but one, and expects Missing, called as that ServiceAccount,
// to report exactly that rule's verbs; with every rule bound, nothing.
func TestMissingNamesExactlyTheRuleNotGranted(t *testing.T) {
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(testCluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Required()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "operator"}, Rules: rules[1:]}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "operator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "operator", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saConfig, err := testCluster.ServiceAccountConfig(ctx, "default", "operator")
	if err != nil {
		t.Fatal(err)
	}
	saConfig.QPS, saConfig.Burst = 100, 100
	sa, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}

	var want []string
	for _, g := range rules[0].APIGroups {
		for _, r := range rules[0].Resources {
			for _, v := range rules[0].Verbs {
				want = append(want, describe(&authorizationv1.ResourceAttributes{Verb: v, Group: g, Resource: r}))
			}
		}
	}
	sort.Strings(want)
	missing, err := Missing(ctx, sa.AuthorizationV1(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, missing); diff != "" {
		t.Fatalf("missing permissions (-want +got):\n%s", diff)
	}

	role.Rules = rules
	if _, err := admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC updates reach the authorizer through a watch: poll briefly.
	for i := 0; i < 50; i++ {
		if missing, err = Missing(ctx, sa.AuthorizationV1(), []string{"default"}); err == nil && len(missing) == 0 {
			return
		}
	}
	t.Fatalf("with every rule bound, missing = %v (err %v)", missing, err)
}
