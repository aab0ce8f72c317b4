package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/app-operator/app-operator/internal/permissions"
	"github.com/app-operator/app-operator/test/testenv"
)

const (
	installNamespace = "app-operator-system"
	operatorSA       = "app-operator-controller-manager"
	managerRole      = "app-operator-manager-role"
)

// TestInstalledOperatorRunsOnItsOwnRBAC applies config/default as a cluster
// administrator would, then runs the manager binary authenticated only as the
// operator's ServiceAccount, so nothing but the rendered RBAC lets it act.
func TestInstalledOperatorRunsOnItsOwnRBAC(t *testing.T) {
	ctx := context.Background()
	root := mustRepoRoot()
	kubectl(t, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(root, "config", "default"))
	cs := clientset(t)

	t.Run("the manager pod is admitted under Pod Security restricted", func(t *testing.T) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, installNamespace, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Fatalf("namespace %s does not enforce restricted: %v", installNamespace, ns.Labels)
		}
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			pods, err := cs.CoreV1().Pods(installNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller-manager"})
			if err != nil || len(pods.Items) == 0 {
				return false, fmt.Sprintf("no manager pod yet (%v)", err)
			}
			return pods.Items[0].Status.Phase == corev1.PodRunning, string(pods.Items[0].Status.Phase)
		})
	})

	bin := buildManager(t)
	saKubeconfig := serviceAccountKubeconfig(t, installNamespace, operatorSA)

	t.Run("a missing rule stops the manager with a message naming it", func(t *testing.T) {
		role, err := cs.RbacV1().ClusterRoles().Get(ctx, managerRole, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Take core/services out of whichever rule grants it.
		full := role.DeepCopy()
		removed := false
		for i, r := range role.Rules {
			if !slices.Contains(r.APIGroups, "") || !slices.Contains(r.Resources, "services") {
				continue
			}
			role.Rules[i].Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == "services" })
			removed = true
		}
		if !removed {
			t.Fatalf("no rule grants services in %s", managerRole)
		}
		if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cur, err := cs.RbacV1().ClusterRoles().Get(ctx, managerRole, metav1.GetOptions{})
			if err == nil {
				cur.Rules = full.Rules
				_, err = cs.RbacV1().ClusterRoles().Update(ctx, cur, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("restore %s: %v", managerRole, err)
			}
		}()

		// RBAC changes reach the authorizer through a watch; the manager
		// must exit on every attempt from the moment the rule is gone.
		var out bytes.Buffer
		var exitErr error
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			out.Reset()
			cmd := exec.Command(bin, "--kubeconfig="+saKubeconfig, "--health-probe-bind-address=0", "--metrics-bind-address=0")
			cmd.Stdout, cmd.Stderr = &out, &out
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				return false, err.Error()
			}
			go func() { done <- cmd.Wait() }()
			select {
			case exitErr = <-done:
				return exitErr != nil, "the manager exited cleanly"
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				return false, "the manager kept running without the services rule"
			}
		})
		if !strings.Contains(out.String(), "core/services") || !strings.Contains(out.String(), "lacks permissions") {
			t.Errorf("the manager's error does not name the missing rule:\n%s", out.String())
		}
	})

	t.Run("a watched namespace that is gone is a warning, not an exit", func(t *testing.T) {
		// Installed as the chart does with watchNamespaces: the manager's
		// rules bound in each namespace, and get on those Namespaces.
		const sa, live, gone = "namespaced-manager", "team-live", "team-gone"
		if _, err := cs.CoreV1().ServiceAccounts(installNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: live}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: installNamespace}}
		if _, err := cs.RbacV1().RoleBindings(live).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: managerRole},
			Subjects:   subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// And, cluster-wide, the rules on cluster-scoped resources.
		required, err := permissions.Required()
		if err != nil {
			t.Fatal(err)
		}
		_, clusterScoped := permissions.SplitByScope(required)
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			Rules: append([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{live, gone}, Verbs: []string{"get"}}},
				clusterScoped...),
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
			Subjects:   subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(t.TempDir(), "manager.log")
		probe := freePort(t)
		stop := startManagerLogging(t, bin, serviceAccountKubeconfig(t, installNamespace, sa), logPath,
			"--watch-namespaces="+live+","+gone, "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe), "--metrics-bind-address=0")
		defer stop()
		waitHTTP(t, "http://127.0.0.1:"+strconv.Itoa(probe)+"/readyz", 60*time.Second)
		log, _ := os.ReadFile(logPath)
		if !strings.Contains(string(log), "a watched namespace does not exist") || !strings.Contains(string(log), gone) {
			t.Errorf("the manager does not warn about namespace %s:\n%s", gone, log)
		}
	})

	t.Run("an API server that does not answer stops the manager after --permission-check-timeout", func(t *testing.T) {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["closed"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:" + strconv.Itoa(freePort(t))}
		kc.AuthInfos["closed"] = &clientcmdapi.AuthInfo{Token: "unused"}
		kc.Contexts["closed"] = &clientcmdapi.Context{Cluster: "closed", AuthInfo: "closed"}
		kc.CurrentContext = "closed"
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, err := exec.Command(bin, "--kubeconfig="+path, "--permission-check-timeout=3s", "--health-probe-bind-address=0", "--metrics-bind-address=0").CombinedOutput()
		took := time.Since(start)
		if err == nil || !strings.Contains(string(out), "Unable to check the operator's permissions") || !strings.Contains(string(out), "connection refused") {
			t.Errorf("exit %v, want an error naming the refused connection:\n%s", err, out)
		}
		if took < 3*time.Second || took > 10*time.Second {
			t.Errorf("the manager exited after %s, want after the 3s timeout", took)
		}
	})

	probe, metrics := freePort(t), freePort(t)
	stop := startManager(t, bin, saKubeconfig,
		"--leader-elect", "--leader-election-namespace="+installNamespace,
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metrics))
	defer stop()
	waitHTTP(t, "http://127.0.0.1:"+strconv.Itoa(probe)+"/readyz", 60*time.Second)

	t.Run("every sample becomes Ready, its pods admitted under Pod Security baseline", func(t *testing.T) {
		c := operatorClient(t)
		objs := samplesInNamespaces(t, map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
		for _, u := range objs {
			if err := c.Create(ctx, u); err != nil {
				t.Fatalf("create the sample %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		for _, u := range objs {
			waitReadyUnstructured(t, c, u, 3*time.Minute)
		}
	})

	t.Run("metrics answer 401 without a token, 403 without the reader role, 200 with it", func(t *testing.T) {
		url := "https://127.0.0.1:" + strconv.Itoa(metrics) + "/metrics"
		for _, name := range []string{"no-metrics", "scraper"} {
			if _, err := cs.CoreV1().ServiceAccounts(installNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "app-operator-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: installNamespace}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tokenOf := func(sa string) string {
			cfg, err := testCluster.ServiceAccountConfig(ctx, installNamespace, sa)
			if err != nil {
				t.Fatal(err)
			}
			return cfg.BearerToken
		}
		for _, tc := range []struct {
			token string
			want  int
		}{
			{"", http.StatusUnauthorized},
			{tokenOf("no-metrics"), http.StatusForbidden},
			{tokenOf("scraper"), http.StatusOK},
		} {
			testenv.Eventually(t, 30*time.Second, func() (bool, string) {
				code, err := get(url, tc.token)
				return err == nil && code == tc.want, fmt.Sprintf("status %d (err %v), want %d", code, err, tc.want)
			})
		}
	})
}

// waitReadyUnstructured waits for Ready=True on any kind.
func waitReadyUnstructured(t *testing.T, c client.Client, u *unstructured.Unstructured, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			m := cond.(map[string]any)
			if m["type"] == "Ready" {
				return m["status"] == "True", fmt.Sprintf("%s %s: Ready=%v %v: %v", u.GetKind(), u.GetName(), m["status"], m["reason"], m["message"])
			}
		}
		return false, fmt.Sprintf("%s %s has no Ready condition", u.GetKind(), u.GetName())
	})
	testenv.CheckStatusInvariants(t, u)
}

func kubectl(t *testing.T, args ...string) {
	t.Helper()
	testenv.Kubectl(t, testCluster.BinDir(), testCluster.Kubeconfig, args...)
}

// buildManager builds the manager binary the way `make build` does.
func buildManager(t *testing.T) string {
	t.Helper()
	bin, err := testenv.BuildManager(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// serviceAccountKubeconfig writes a kubeconfig whose only credential is a
// token of the ServiceAccount.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	cfg, err := testCluster.ServiceAccountConfig(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startManager runs the manager binary until stop is called.
func startManager(t *testing.T, bin, kubeconfig string, args ...string) (stop func()) {
	t.Helper()
	return startManagerLogging(t, bin, kubeconfig, filepath.Join(t.TempDir(), "manager.log"), args...)
}

// startManagerLogging runs the manager binary, its log in logPath, until
// stop is called.
func startManagerLogging(t *testing.T, bin, kubeconfig, logPath string, args ...string) (stop func()) {
	t.Helper()
	p := testenv.StartManager(t, bin, kubeconfig, logPath, args...)
	return func() { p.Stop(t) }
}

func waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		code, err := get(url, "")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%s: %d %v", url, code, err)
	})
}

func get(url, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// The metrics server's certificate is self-signed.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
