// Package bundle builds the operator's OLM bundle (registry+v1) and its
// file-based catalog from the manifests the Helm chart and kustomize install:
// the CRDs (config/crd/bases), the RBAC (config/rbac), the manager's
// Deployment (config/manager) and metrics Service (config/default), the
// samples (config/samples) and the hand-written part of the
// ClusterServiceVersion (config/manifests). `make bundle` writes it.
package bundle

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/google/go-containerregistry/pkg/name"

	cachev1alpha1 "github.com/app-operator/app-operator/api/cache/v1alpha1"
	etcdv1beta2 "github.com/app-operator/app-operator/api/etcd/v1beta2"
	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	redisresources "github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

const (
	// Package is the OLM package name, and the prefix of every object the
	// bundle installs (as kustomize's namePrefix in config/default).
	Package = "app-operator"
	// Channel is the one channel the catalog publishes.
	Channel = "stable"
	// KeepAnnotation keeps the CRDs when the operator is uninstalled, as
	// the Helm chart's do: OLM v1 installs a bundle as a Helm release and
	// gives the objects so annotated no owner reference.
	KeepAnnotation = "helm.sh/resource-policy"
	// serviceAccount is the manager's ServiceAccount.
	serviceAccount = Package + "-controller-manager"
	// deploymentName is the manager's Deployment.
	deploymentName = Package + "-controller-manager"
)

// Options say which version of the bundle to build.
type Options struct {
	// Root is the repository's root folder.
	Root string
	// Version is the bundle's (and the operator's) version, MAJOR.MINOR.PATCH.
	Version string
	// Replaces names the bundle this one upgrades, e.g. app-operator.v0.1.0;
	// empty for the first.
	Replaces string
	// Image is the manager's image.
	Image string
}

// File is one file of the bundle or the catalog, by its path under the
// bundle's folder.
type File struct {
	Path string
	Data []byte
}

// CSVName is the ClusterServiceVersion's name for version v.
func CSVName(v string) string { return Package + ".v" + v }

// Annotations are the bundle's metadata/annotations.yaml, and the labels
// of its image.
func Annotations() map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         Package,
		"operators.operatorframework.io.bundle.channels.v1":        Channel,
		"operators.operatorframework.io.bundle.channel.default.v1": Channel,
	}
}

// Build returns the files of the bundle: manifests/ and metadata/.
func Build(opts Options) ([]File, error) {
	if _, err := semver.Parse(opts.Version); err != nil {
		return nil, fmt.Errorf("version %q: %w", opts.Version, err)
	}
	crds, crdFiles, crdPaths, err := readCRDs(filepath.Join(opts.Root, "config/crd/bases"))
	if err != nil {
		return nil, err
	}
	csv, err := buildCSV(opts, crds)
	if err != nil {
		return nil, err
	}
	var files []File
	csvYAML, err := marshalObject(csv)
	if err != nil {
		return nil, err
	}
	files = append(files, File{"manifests/" + Package + ".clusterserviceversion.yaml", csvYAML})
	for i, crd := range crdFiles {
		files = append(files, File{"manifests/" + filepath.Base(crdPaths[i]), crd})
	}
	// The metrics Service and the ClusterRole that grants reading the
	// metrics, as config/default installs them.
	svc := &corev1.Service{}
	if err := readYAML(filepath.Join(opts.Root, "config/default/metrics_service.yaml"), svc); err != nil {
		return nil, err
	}
	svc.Name = Package + "-" + svc.Name
	svc.Namespace = ""
	delete(svc.Labels, "app.kubernetes.io/managed-by")
	reader := &rbacv1.ClusterRole{}
	if err := readYAML(filepath.Join(opts.Root, "config/rbac/metrics_reader_role.yaml"), reader); err != nil {
		return nil, err
	}
	reader.Name = Package + "-" + reader.Name
	delete(reader.Labels, "app.kubernetes.io/managed-by")
	for _, o := range []struct {
		file string
		obj  any
	}{
		{svc.Name + "_v1_service.yaml", svc},
		{reader.Name + "_rbac.authorization.k8s.io_v1_clusterrole.yaml", reader},
	} {
		data, err := marshalObject(o.obj)
		if err != nil {
			return nil, err
		}
		files = append(files, File{"manifests/" + o.file, data})
	}
	ann, err := yaml.Marshal(map[string]any{"annotations": Annotations()})
	if err != nil {
		return nil, err
	}
	files = append(files, File{"metadata/annotations.yaml", append([]byte(generatedHeader), ann...)})
	return files, nil
}

const generatedHeader = "# Generated by `make bundle` (hack/bundle) from config/. DO NOT EDIT.\n"

// readCRDs reads every CRD of dir, and returns them parsed, as the bundle
// carries them (with the keep annotation), and their files' paths.
func readCRDs(dir string) ([]apiextensionsv1.CustomResourceDefinition, [][]byte, []string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	slices.Sort(paths)
	var crds []apiextensionsv1.CustomResourceDefinition
	var files [][]byte
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		crds = append(crds, crd)
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[KeepAnnotation] = "keep"
		u.SetAnnotations(ann)
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, nil, nil, err
		}
		files = append(files, append([]byte(generatedHeader), data...))
	}
	if len(crds) == 0 {
		return nil, nil, nil, fmt.Errorf("no CRD in %s", dir)
	}
	return crds, files, paths, nil
}

func buildCSV(opts Options, crds []apiextensionsv1.CustomResourceDefinition) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := readYAML(filepath.Join(opts.Root, "config/manifests/bases", Package+".clusterserviceversion.yaml"), csv); err != nil {
		return nil, err
	}
	csv.Name = CSVName(opts.Version)
	csv.Spec.Version.Version = semver.MustParse(opts.Version)
	csv.Spec.Replaces = opts.Replaces
	csv.Annotations["containerImage"] = opts.Image

	examples, err := almExamples(opts.Root)
	if err != nil {
		return nil, err
	}
	csv.Annotations["alm-examples"] = examples

	icon, err := os.ReadFile(filepath.Join(opts.Root, "config/manifests/icon.svg"))
	if err != nil {
		return nil, err
	}
	csv.Spec.Icon = []operatorsv1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"}}

	// The install modes: every namespace, or the namespaces of the
	// OperatorGroup, which OLM puts in the pod's olm.targetNamespaces
	// annotation and the manager reads through --watch-namespaces.
	csv.Spec.InstallModes = []operatorsv1alpha1.InstallMode{
		{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
		{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
		{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: true},
		{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
	}

	owned := map[string]*operatorsv1alpha1.CRDDescription{}
	for i := range csv.Spec.CustomResourceDefinitions.Owned {
		d := &csv.Spec.CustomResourceDefinitions.Owned[i]
		owned[d.Name] = d
	}
	for _, crd := range crds {
		d, ok := owned[crd.Name]
		if !ok {
			return nil, fmt.Errorf("CRD %s is not among the owned CRDs of config/manifests/bases", crd.Name)
		}
		if err := describeCRD(d, crd); err != nil {
			return nil, err
		}
	}
	if len(owned) != len(crds) {
		return nil, fmt.Errorf("config/manifests/bases names %d owned CRDs, config/crd/bases holds %d", len(owned), len(crds))
	}

	strategy, err := installStrategy(opts)
	if err != nil {
		return nil, err
	}
	csv.Spec.InstallStrategy = strategy
	if csv.Spec.RelatedImages, err = relatedImages(opts.Root, opts.Image); err != nil {
		return nil, err
	}
	return csv, nil
}

// describeCRD fills d with what the CRD says: its storage version, its
// description, and a descriptor for every top-level field of spec and
// status.
func describeCRD(d *operatorsv1alpha1.CRDDescription, crd apiextensionsv1.CustomResourceDefinition) error {
	var version *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			version = &crd.Spec.Versions[i]
		}
	}
	if version == nil || version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
		return fmt.Errorf("CRD %s has no storage version with a schema", crd.Name)
	}
	if d.Version != version.Name || d.Kind != crd.Spec.Names.Kind {
		return fmt.Errorf("config/manifests/bases names %s %s/%s, the CRD %s/%s", crd.Name, d.Kind, d.Version, crd.Spec.Names.Kind, version.Name)
	}
	schema := version.Schema.OpenAPIV3Schema
	d.Description = firstSentence(schema.Description)
	spec, status := schema.Properties["spec"], schema.Properties["status"]
	d.SpecDescriptors = nil
	for _, field := range sortedKeys(spec.Properties) {
		d.SpecDescriptors = append(d.SpecDescriptors, specDescriptor(field, spec.Properties[field]))
	}
	d.StatusDescriptors = nil
	for _, field := range sortedKeys(status.Properties) {
		d.StatusDescriptors = append(d.StatusDescriptors, statusDescriptor(field, status.Properties[field]))
	}
	return nil
}

func specDescriptor(field string, p apiextensionsv1.JSONSchemaProps) operatorsv1alpha1.SpecDescriptor {
	var x []string
	switch {
	case field == "size" || field == "replicas" || field == "nodes":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:podCount"}
	case field == "resources" || strings.HasSuffix(field, "Resources") || field == "resourceRequirements":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	case field == "image":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:text"}
	case p.Type == "boolean":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	case p.Type == "integer" || p.Type == "number":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:number"}
	case p.Type == "string" && len(p.Enum) > 0:
		x = []string{"urn:alm:descriptor:com.tectonic.ui:select:" + enumValues(p.Enum)}
	case p.Type == "string":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:text"}
	default:
		x = []string{"urn:alm:descriptor:com.tectonic.ui:advanced"}
	}
	return operatorsv1alpha1.SpecDescriptor{
		Path:         field,
		DisplayName:  displayName(field),
		Description:  firstSentence(p.Description),
		XDescriptors: x,
	}
}

func statusDescriptor(field string, p apiextensionsv1.JSONSchemaProps) operatorsv1alpha1.StatusDescriptor {
	var x []string
	switch {
	case field == "conditions":
		x = []string{"urn:alm:descriptor:io.kubernetes.conditions"}
	case field == "nodes" && p.Type == "array":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:podStatuses"}
	case field == "replicas" || field == "readyReplicas" || field == "size":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:podCount"}
	case field == "selector":
		x = []string{"urn:alm:descriptor:com.tectonic.ui:selector"}
	default:
		x = []string{"urn:alm:descriptor:text"}
	}
	return operatorsv1alpha1.StatusDescriptor{
		Path:         field,
		DisplayName:  displayName(field),
		Description:  firstSentence(p.Description),
		XDescriptors: x,
	}
}

// enumValues is the values of a string enum.
func enumValues(enum []apiextensionsv1.JSON) string {
	var vs []string
	for _, e := range enum {
		var s string
		if json.Unmarshal(e.Raw, &s) == nil {
			vs = append(vs, s)
		}
	}
	return strings.Join(vs, ",")
}

var sentenceEnd = regexp.MustCompile(`\.(\s|$)`)

// firstSentence is the first sentence of a description, on one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if loc := sentenceEnd.FindStringIndex(s); loc != nil {
		return s[:loc[0]+1]
	}
	return s
}

// displayName turns a field name into words: nodePort is "Node Port".
func displayName(field string) string {
	var b strings.Builder
	runes := []rune(field)
	for i, r := range runes {
		if i == 0 {
			b.WriteRune(unicode.ToUpper(r))
			continue
		}
		if unicode.IsUpper(r) && (!unicode.IsUpper(runes[i-1]) || (i+1 < len(runes) && unicode.IsLower(runes[i+1]))) {
			b.WriteRune(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// SampleFiles are the samples of config/samples, every kind's: the seeds'
// own, as the alm-examples carry them.
func SampleFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "config/samples"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".yaml") && d.Name() != "kustomization.yaml" {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// almExamples is the alm-examples annotation: every sample, as JSON, with
// no namespace (a console creates an example in the namespace it shows).
func almExamples(root string) (string, error) {
	files, err := SampleFiles(root)
	if err != nil {
		return "", err
	}
	var examples []map[string]any
	for _, f := range files {
		u := &unstructured.Unstructured{}
		if err := readYAML(f, &u.Object); err != nil {
			return "", err
		}
		u.SetNamespace("")
		examples = append(examples, u.Object)
	}
	data, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// installStrategy is the manager's Deployment and permissions, from the
// same files kustomize's config/default installs.
func installStrategy(opts Options) (operatorsv1alpha1.NamedInstallStrategy, error) {
	var none operatorsv1alpha1.NamedInstallStrategy
	dep := &appsv1.Deployment{}
	if err := readYAMLDoc(filepath.Join(opts.Root, "config/manager/manager.yaml"), "Deployment", dep); err != nil {
		return none, err
	}
	delete(dep.Labels, "app.kubernetes.io/managed-by")
	pod := &dep.Spec.Template.Spec
	pod.ServiceAccountName = serviceAccount
	c := &pod.Containers[0]
	c.Image = opts.Image
	// The snapshot tool is in the manager's own image.
	for i := range c.Env {
		if c.Env[i].Name == "SNAPSHOT_IMAGE" {
			c.Env[i].Value = opts.Image
		}
	}
	// The namespaces of the OperatorGroup (empty: all of them).
	c.Env = append(c.Env, corev1.EnvVar{
		Name: "WATCH_NAMESPACES",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['olm.targetNamespaces']",
		}},
	})
	c.Args = append(c.Args, "--watch-namespaces=$(WATCH_NAMESPACES)")

	role := &rbacv1.ClusterRole{}
	if err := readYAML(filepath.Join(opts.Root, "config/rbac/role.yaml"), role); err != nil {
		return none, err
	}
	metricsAuth := &rbacv1.ClusterRole{}
	if err := readYAML(filepath.Join(opts.Root, "config/rbac/metrics_auth_role.yaml"), metricsAuth); err != nil {
		return none, err
	}
	leader := &rbacv1.Role{}
	if err := readYAML(filepath.Join(opts.Root, "config/rbac/leader_election_role.yaml"), leader); err != nil {
		return none, err
	}
	return operatorsv1alpha1.NamedInstallStrategy{
		StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
		StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{
				Name:  deploymentName,
				Label: dep.Labels,
				Spec:  dep.Spec,
			}},
			ClusterPermissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: serviceAccount,
				Rules:              append(slices.Clone(role.Rules), metricsAuth.Rules...),
			}},
			Permissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{
				ServiceAccountName: serviceAccount,
				Rules:              leader.Rules,
			}},
		},
	}, nil
}

// relatedImages are the manager's image, the images the kinds run by
// default, and every image the samples run (a sample's image that is not
// an image reference, such as the MicroServiceDeploy seed's placeholder,
// runs nothing and is left out).
func relatedImages(root, manager string) ([]operatorsv1alpha1.RelatedImage, error) {
	images := []string{manager, cachev1alpha1.DefaultImage, redisresources.DefaultImage}
	files, err := SampleFiles(root)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		u := &unstructured.Unstructured{}
		if err := readYAML(f, &u.Object); err != nil {
			return nil, err
		}
		switch u.GetKind() {
		case "RedisEnterpriseCluster":
			obj := &redisv1alpha1.RedisEnterpriseCluster{}
			if err := readYAML(f, obj); err != nil {
				return nil, err
			}
			// The sample's Redis Enterprise image runs the open-source one.
			img, _, _ := redisresources.Image(&obj.Spec, "")
			images = append(images, img)
		case "EtcdCluster":
			obj := &etcdv1beta2.EtcdCluster{}
			if err := readYAML(f, obj); err != nil {
				return nil, err
			}
			images = append(images, obj.Spec.Image(obj.Spec.Version))
		default:
			if img, ok, _ := unstructured.NestedString(u.Object, "spec", "image"); ok {
				images = append(images, img)
			}
		}
	}
	var related []operatorsv1alpha1.RelatedImage
	seen := map[string]bool{}
	for i, img := range images {
		ref, err := name.ParseReference(img)
		if err != nil || seen[img] {
			continue
		}
		seen[img] = true
		n := path.Base(ref.Context().RepositoryStr())
		if i == 0 {
			n = "manager"
		} else if t, ok := ref.(name.Tag); ok {
			n += "-" + strings.ReplaceAll(t.TagStr(), ".", "-")
		}
		related = append(related, operatorsv1alpha1.RelatedImage{Name: n, Image: img})
	}
	return related, nil
}

func readYAML(file string, obj any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, obj); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// readYAMLDoc reads the document of kind from a multi-document file.
func readYAMLDoc(file, kind string, obj any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var meta struct{ Kind string }
		if yaml.Unmarshal([]byte(doc), &meta) == nil && meta.Kind == kind {
			if err := yaml.Unmarshal([]byte(doc), obj); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s holds no %s", file, kind)
}

// marshalObject writes an object as YAML without the fields a typed
// object carries empty (creationTimestamp, status).
func marshalObject(obj any) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		// The Deployment's pod template, inside the CSV.
		if install, ok := spec["install"].(map[string]any); ok {
			if s, ok := install["spec"].(map[string]any); ok {
				if deps, ok := s["deployments"].([]any); ok {
					for _, d := range deps {
						dropEmpty(d)
					}
				}
			}
		}
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append([]byte(generatedHeader), out...), nil
}

// dropEmpty removes the empty creationTimestamp and strategy a typed
// Deployment spec carries.
func dropEmpty(d any) {
	dm, ok := d.(map[string]any)
	if !ok {
		return
	}
	spec, _ := dm["spec"].(map[string]any)
	if spec == nil {
		return
	}
	if s, ok := spec["strategy"].(map[string]any); ok && len(s) == 0 {
		delete(spec, "strategy")
	}
	if t, ok := spec["template"].(map[string]any); ok {
		if meta, ok := t["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
	}
}
