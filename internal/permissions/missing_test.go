package permissions

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/app-operator/app-operator/test/cluster"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	cluster.Run(m, cluster.Options{Profile: cluster.APIOnly}, func(c *cluster.Cluster) { testCluster = c })
}

// TestMissingNamesExactlyTheRuleNotGranted binds a ServiceAccount to the
// required rules but one, and expects Check, called as that ServiceAccount,
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

	needs := expand(rules[:1])
	want := make([]string, 0, len(needs))
	for _, n := range needs {
		want = append(want, describe(n, ""))
	}
	sort.Strings(want)
	got, err := Check(ctx, sa, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Missing); diff != "" {
		t.Fatalf("missing permissions (-want +got):\n%s", diff)
	}

	role.Rules = rules
	if _, err := admin.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC updates reach the authorizer through a watch: poll briefly.
	for i := 0; i < 50; i++ {
		if got, err = Check(ctx, sa, []string{"default"}); err == nil && len(got.Missing) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("with every rule bound, missing = %v (err %v)", got.Missing, err)
}
