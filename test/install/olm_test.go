package install

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/app-operator/app-operator/internal/bundle"
	"github.com/app-operator/app-operator/test/cluster"
	"github.com/app-operator/app-operator/test/testenv"
)

const (
	// installer is the ServiceAccount OLM v1 installs the bundle as.
	installer = "app-operator-installer"
	// extension is the ClusterExtension, and OLM's Helm release.
	extension = "app-operator"
	// upgradeVersion is the second bundle's version, in the channel after
	// the committed one.
	upgradeVersion = "0.1.1"
)

var (
	catalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	extensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// The operator from a catalog, as OLM v1 installs it: the committed bundle
// and catalog, as images in the cluster's registry; a ClusterCatalog and a
// ClusterExtension installing the package with a ServiceAccount that holds
// what the bundle needs; the manager Ready in the restricted namespace, and
// the samples Ready. Then a second bundle version in the channel: OLM
// upgrades to it, the manager rolls to its image and rewrites no child.
// Then the ClusterExtension deleted: the manager goes, the CRDs, the
// samples and their children stay, as after `helm uninstall`.
func TestOLMInstallUpgradeUninstall(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	cs := testenv.Clientset(t, testCluster.Config())
	c := testenv.Client(t, testCluster.Config())
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	removeEarlierInstalls(t, ctx, cs, c)

	started := time.Now()
	if err := testCluster.StartOLM(ctx, ""); err != nil {
		t.Fatal(err)
	}
	t.Logf("OLM (catalogd, operator-controller) ready in %.1f s", time.Since(started).Seconds())

	// The committed bundle, as `make bundle` wrote it: version, manager
	// image and bundle image.
	csv := readCSV(t, filepath.Join(root, "bundle"))
	version := csv.Spec.Version.String()
	managerImage := csv.Annotations["containerImage"]
	// OLM v1 takes full references only.
	bundleImage := "docker.io/library/app-operator-bundle:v" + version
	dir := t.TempDir()
	pushImage(t, ctx, strings.TrimPrefix(managerImage, imageRepository+":"))
	pushContentImage(t, ctx, dir, bundleImage, bundleImageArgs(t, filepath.Join(root, "bundle"))...)
	catalogImage := "docker.io/library/app-operator-catalog:v" + version
	pushContentImage(t, ctx, dir, catalogImage, "--content="+filepath.Join(root, "catalog")+"=/configs",
		"--label=operators.operatorframework.io.index.configs.v1=/configs")

	createInstaller(t, ctx, cs, csv)
	catalog := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "app-operator"},
		"spec": map[string]any{"source": map[string]any{
			"type":  "Image",
			"image": map[string]any{"ref": catalogImage},
		}},
	}}
	catalog.SetGroupVersionKind(catalogGVK)
	if err := c.Create(ctx, catalog); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, catalog, "Serving", 3*time.Minute)

	installed := time.Now()
	ext := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": extension},
		"spec": map[string]any{
			"namespace":      namespace,
			"serviceAccount": map[string]any{"name": installer},
			"source": map[string]any{
				"sourceType": "Catalog",
				"catalog":    map[string]any{"packageName": bundle.Package, "channels": []any{bundle.Channel}},
			},
		},
	}}
	ext.SetGroupVersionKind(extensionGVK)
	if err := c.Create(ctx, ext); err != nil {
		t.Fatal(err)
	}
	waitInstalled(t, c, version)
	pods := managerPods(t, cs, 1)
	t.Logf("OLM install: bundle %s installed, manager Ready %.1f s after the ClusterExtension was created", version, time.Since(installed).Seconds())
	for _, p := range pods {
		if img := p.Spec.Containers[0].Image; img != managerImage {
			t.Errorf("pod %s runs %s, want %s", p.Name, img, managerImage)
		}
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || p.Spec.SecurityContext.RunAsNonRoot == nil || !*p.Spec.SecurityContext.RunAsNonRoot {
			t.Errorf("pod %s: security context %+v, pod %+v: want a read-only root filesystem and a non-root user", p.Name, sc, p.Spec.SecurityContext)
		}
	}
	leaderPod(t, cs)
	applySamples(t, cs)
	waitSamples(t, c)
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		page, err := testenv.Get(http.DefaultClient, "http://127.0.0.1:30100/")
		return err == nil && strings.Contains(page, "Hello, World!"), fmt.Sprintf("the MyWeb sample's node port answered %q (%v)", page, err)
	})

	// A second version in the channel, replacing the first: its bundle
	// names a second tag of the manager's image.
	upgradeImage := imageRepository + ":" + upgradeVersion
	pushImage(t, ctx, upgradeVersion)
	bundle2 := filepath.Join(dir, "bundle-2")
	gorun(t, root, "./hack/bundle", "--version="+upgradeVersion, "--replaces="+csv.Name, "--image="+upgradeImage,
		"--output="+bundle2, "--catalog=")
	bundleImage2 := "docker.io/library/app-operator-bundle:v" + upgradeVersion
	pushContentImage(t, ctx, dir, bundleImage2, bundleImageArgs(t, bundle2)...)
	fbc, err := bundle.Catalog(root, []bundle.CatalogBundle{
		{Version: version, Image: bundleImage},
		{Version: upgradeVersion, Image: bundleImage2},
	})
	if err != nil {
		t.Fatal(err)
	}
	catalog2 := filepath.Join(dir, "catalog-2")
	if err := os.MkdirAll(filepath.Join(catalog2, bundle.Package), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(catalog2, bundle.Package, "catalog.yaml"), fbc, 0o644); err != nil {
		t.Fatal(err)
	}
	catalogImage2 := "docker.io/library/app-operator-catalog:v" + upgradeVersion
	pushContentImage(t, ctx, dir, catalogImage2, "--content="+catalog2+"=/configs",
		"--label=operators.operatorframework.io.index.configs.v1=/configs")

	readySince := readyTransitions(t, c)
	upgraded := time.Now()
	if err := c.Get(ctx, client.ObjectKeyFromObject(catalog), catalog); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(catalog.Object, catalogImage2, "spec", "source", "image", "ref"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, catalog); err != nil {
		t.Fatal(err)
	}
	waitInstalled(t, c, upgradeVersion)
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=app-operator"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range list.Items {
			if p.Spec.Containers[0].Image != upgradeImage {
				return false, fmt.Sprintf("manager pods %v: pod %s runs %s", testenv.PodSummary(list), p.Name, p.Spec.Containers[0].Image)
			}
		}
		return len(list.Items) == 1, fmt.Sprintf("manager pods %v", testenv.PodSummary(list))
	})
	managerPods(t, cs, 1)
	newLeader := leaderPod(t, cs)
	childWrites := checkUpgradeChangedNothing(t, c, readySince, upgraded)
	t.Logf("OLM upgrade to %s: manager rolled in %.1f s, new leader %s, %d child writes", upgradeVersion, time.Since(upgraded).Seconds(), newLeader, childWrites)

	// Uninstall: the ClusterExtension deleted, OLM removes what it
	// installed but the CRDs (helm.sh/resource-policy: keep); the samples
	// and their children stay.
	if err := c.Delete(ctx, ext); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ext), ext)
		return apierrors.IsNotFound(err), fmt.Sprintf("ClusterExtension after delete: %v", err)
	})
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("manager pods after uninstall: %v (%v)", testenv.PodSummary(pods), err)
	})
	for _, crd := range ownedCRDs(csv) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, obj); err != nil {
			t.Errorf("CRD %s after uninstall: %v", crd, err)
		} else if obj.GetDeletionTimestamp() != nil {
			t.Errorf("CRD %s is being deleted after uninstall", crd)
		}
	}
	// The garbage collector has had time to act on any owner reference.
	time.Sleep(5 * time.Second)
	waitSamples(t, c)
	for _, name := range []string{"nginx-app", "nginx-web", "example-memcached", "myweb"} {
		if _, err := cs.AppsV1().Deployments(samplesNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Deployment %s after uninstall: %v", name, err)
		}
	}
	if err := c.Delete(ctx, catalog); err != nil {
		t.Error(err)
	}
}

// removeEarlierInstalls removes what the package's other tests left: the
// kustomize tree's objects (its manager watches every namespace, and OLM
// installs no object that exists already, such as the metrics reader
// ClusterRole), its namespace, the CRDs the Helm chart kept (with every
// sample) and the samples' namespace.
func removeEarlierInstalls(t *testing.T, ctx context.Context, cs kubernetes.Interface, c client.Client) {
	t.Helper()
	// The tree's cluster-scoped objects, its CRDs and its own namespace;
	// TestKustomizeInstall's overlay put the rest in namespace+"-k".
	kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-k", "config/default")
	namespaces := []string{namespace, namespace + "-k", samplesNS}
	for _, ns := range namespaces {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	crds := ownedCRDs(readCSV(t, filepath.Join(mustRoot(t), "bundle")))
	for _, name := range crds {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		obj.SetName(name)
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
		for _, ns := range namespaces {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("namespace %s still there (%v)", ns, err)
			}
		}
		for _, name := range crds {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("CRD %s still there (%v)", name, err)
			}
		}
		return true, ""
	})
}

func mustRoot(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readCSV reads the ClusterServiceVersion of a bundle folder.
func readCSV(t *testing.T, dir string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "manifests", bundle.Package+".clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(raw, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}

func ownedCRDs(csv *operatorsv1alpha1.ClusterServiceVersion) []string {
	names := make([]string, 0, len(csv.Spec.CustomResourceDefinitions.Owned))
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		names = append(names, d.Name)
	}
	return names
}

// bundleImageArgs are hack/image's arguments for a bundle folder's image:
// its manifests and metadata, labelled with its annotations.
func bundleImageArgs(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &ann); err != nil {
		t.Fatal(err)
	}
	args := make([]string, 0, 2+len(ann.Annotations))
	args = append(args, "--content="+filepath.Join(dir, "manifests")+"=/manifests", "--content="+filepath.Join(dir, "metadata")+"=/metadata")
	for k, v := range ann.Annotations {
		args = append(args, "--label="+k+"="+v)
	}
	return args
}

// pushContentImage builds an image of files with hack/image and pushes it
// to the cluster's registry as ref.
func pushContentImage(t *testing.T, ctx context.Context, dir, ref string, args ...string) {
	t.Helper()
	archive := filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(ref)+".oci.tar")
	gorun(t, mustRoot(t), append([]string{"./hack/image", "--tag=" + ref, "--output=" + archive}, args...)...)
	if err := testCluster.PushImageArchive(ctx, archive, ref); err != nil {
		t.Fatal(err)
	}
}

func gorun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// createInstaller creates the ServiceAccount OLM v1 installs the bundle as,
// and binds it to what that takes: managing the kinds of object the bundle
// holds (CRDs, the Deployment, its ServiceAccount, the Service, the RBAC
// objects), and the permissions the CSV grants the manager, which RBAC
// lets only a holder of them grant.
func createInstaller(t *testing.T, ctx context.Context, cs kubernetes.Interface, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	createNamespace(t, cs, namespace, map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"})
	manage := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: manage},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, Verbs: manage},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "services"}, Verbs: manage},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: manage},
		// The metrics reader ClusterRole the bundle ships.
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}
	for _, p := range csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		rules = append(rules, p.Rules...)
	}
	for _, p := range csv.Spec.InstallStrategy.StrategySpec.Permissions {
		rules = append(rules, p.Rules...)
	}
	// OLM adds reading namespaces to permissions it turns into cluster
	// permissions (all namespaces).
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: installer}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: installer}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: installer},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: installer},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: installer}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCondition waits until obj's condition of type cond is True.
func waitCondition(t *testing.T, c client.Client, obj *unstructured.Unstructured, cond string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		got := condition(obj, cond)
		return got["status"] == "True", fmt.Sprintf("%s %s: %s %v", obj.GetKind(), obj.GetName(), cond, got)
	})
}

// waitInstalled waits until the ClusterExtension has installed version.
func waitInstalled(t *testing.T, c client.Client, version string) {
	t.Helper()
	ext := &unstructured.Unstructured{}
	ext.SetGroupVersionKind(extensionGVK)
	testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKey{Name: extension}, ext); err != nil {
			return false, err.Error()
		}
		got, _, _ := unstructured.NestedString(ext.Object, "status", "install", "bundle", "version")
		installed, progressing := condition(ext, "Installed"), condition(ext, "Progressing")
		return got == version && installed["status"] == "True",
			fmt.Sprintf("ClusterExtension: bundle %q (want %s), Installed %v, Progressing %v", got, version, installed, progressing)
	})
}
