package bundle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// loadBundle loads the committed bundle as OLM's tools do.
func loadBundle(t *testing.T) *manifests.Bundle {
	t.Helper()
	b, err := readBundle(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatalf("load bundle/: %v", err)
	}
	return b
}

// The committed bundle passes OLM's validators with neither an error nor a
// warning: the default suite (CSV, CRDs, bundle), the OperatorHub suite
// (operatorhub/v2, standard capabilities and categories) and good
// practices, as `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs them.
func TestBundleValidates(t *testing.T) {
	b := loadBundle(t)
	suites := map[string]interfaces.Validators{
		"default":       validation.DefaultBundleValidators,
		"operatorhub":   {validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator, validation.StandardCategoriesValidator},
		"goodpractices": {validation.GoodPracticesValidator},
	}
	// The OperatorHub validator checks the CSV against the Kubernetes
	// version it will run on: the newest the control plane is built at.
	optional := map[string]string{"k8s-version": "1.37"}
	for suiteName, suite := range suites {
		results := suite.Validate(b, optional)
		var n int
		for _, r := range results {
			for _, e := range r.Errors {
				t.Errorf("%s suite: error: %s", suiteName, e)
				n++
			}
			for _, w := range r.Warnings {
				t.Errorf("%s suite: warning: %s", suiteName, w)
				n++
			}
		}
		if len(results) == 0 {
			t.Errorf("%s suite: no result: the bundle was not validated", suiteName)
		}
		t.Logf("%s suite: %d validators, %d findings", suiteName, len(suite), n)
	}
}

// The validators find a broken bundle: without the icon and with a
// capability level that is not one of the five, the OperatorHub suite
// complains (so that TestBundleValidates cannot pass by checking nothing).
func TestValidatorsFindFaults(t *testing.T) {
	b := loadBundle(t)
	b.CSV.Spec.Icon = nil
	b.CSV.Annotations["capabilities"] = "Seamless"
	var findings []string
	for _, r := range (interfaces.Validators{validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator}).Validate(b, map[string]string{"k8s-version": "1.37"}) {
		for _, e := range r.Errors {
			findings = append(findings, e.Error())
		}
		for _, w := range r.Warnings {
			findings = append(findings, w.Error())
		}
	}
	for _, want := range []string{"Icon", "capabilities"} {
		if !slices.ContainsFunc(findings, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no finding about %s in %q", want, findings)
		}
	}
}

// The committed bundle and catalog are what `make bundle` writes from
// config/ today.
func TestBundleIsFresh(t *testing.T) {
	csv := loadBundle(t).CSV
	files, err := Build(Options{Root: root, Version: csv.Spec.Version.String(), Replaces: csv.Spec.Replaces, Image: csv.Annotations["containerImage"]})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, f.Path)
		got, err := os.ReadFile(filepath.Join(root, "bundle", f.Path))
		if err != nil {
			t.Errorf("%v: run `make bundle`", err)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("bundle/%s is stale: run `make bundle`", f.Path)
		}
	}
	var have []string
	_ = filepath.WalkDir(filepath.Join(root, "bundle"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Join(root, "bundle"), p)
			have = append(have, rel)
		}
		return err
	})
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("bundle/ holds %q, make bundle writes %q", have, want)
	}
}

// examples are the CSV's alm-examples.
func examples(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) []unstructured.Unstructured {
	t.Helper()
	var objs []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &objs); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	out := make([]unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, unstructured.Unstructured{Object: o})
	}
	return out
}

// The scorecard's static checks: every kind has an example (the sample of
// config/samples) with a spec; every field of an example's spec, and every
// field of every kind's spec and status, has a descriptor; every owned CRD
// names the resources it creates and has an OpenAPI schema for its spec and
// status.
func TestScorecardStaticChecks(t *testing.T) {
	b := loadBundle(t)
	csv := b.CSV
	owned := map[string]operatorsv1alpha1.CRDDescription{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind] = d
	}
	samples, err := SampleFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	exs := examples(t, csv)
	if len(exs) != len(samples) {
		t.Errorf("%d alm-examples, %d samples in config/samples", len(exs), len(samples))
	}
	withExample := map[string]bool{}
	for _, ex := range exs {
		d, ok := owned[ex.GetKind()]
		if !ok {
			t.Errorf("example %s %s: not an owned kind", ex.GetKind(), ex.GetName())
			continue
		}
		withExample[ex.GetKind()] = true
		spec, ok := ex.Object["spec"].(map[string]any)
		if !ok || len(spec) == 0 {
			t.Errorf("example %s %s has no spec", ex.GetKind(), ex.GetName())
		}
		for field := range spec {
			if !slices.ContainsFunc(d.SpecDescriptors, func(s operatorsv1alpha1.SpecDescriptor) bool { return s.Path == field }) {
				t.Errorf("example %s: spec.%s has no spec descriptor", ex.GetKind(), field)
			}
		}
	}
	for _, crd := range b.V1CRDs {
		kind := crd.Spec.Names.Kind
		d := owned[kind]
		if !withExample[kind] {
			t.Errorf("%s has no example", kind)
		}
		if len(d.Resources) == 0 {
			t.Errorf("%s names no resource it creates", kind)
		}
		if d.Description == "" || d.DisplayName == "" {
			t.Errorf("%s: display name %q, description %q", kind, d.DisplayName, d.Description)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			schema := v.Schema.OpenAPIV3Schema
			spec, status := schema.Properties["spec"], schema.Properties["status"]
			if len(spec.Properties) == 0 || len(status.Properties) == 0 {
				t.Errorf("%s %s: no schema for spec or status", kind, v.Name)
			}
			for field := range spec.Properties {
				if !slices.ContainsFunc(d.SpecDescriptors, func(s operatorsv1alpha1.SpecDescriptor) bool { return s.Path == field }) {
					t.Errorf("%s: spec.%s has no spec descriptor", kind, field)
				}
			}
			for field := range status.Properties {
				if !slices.ContainsFunc(d.StatusDescriptors, func(s operatorsv1alpha1.StatusDescriptor) bool { return s.Path == field }) {
					t.Errorf("%s: status.%s has no status descriptor", kind, field)
				}
			}
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("%s %s: no status subresource", kind, v.Name)
			}
		}
	}
}

// What OLM v1 installs: a bundle that supports AllNamespaces and ships no
// webhook or API service; what an uninstall keeps: the CRDs, as the Helm
// chart's.
func TestOLMv1Installable(t *testing.T) {
	b := loadBundle(t)
	csv := b.CSV
	if !slices.ContainsFunc(csv.Spec.InstallModes, func(m operatorsv1alpha1.InstallMode) bool {
		return m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces && m.Supported
	}) {
		t.Error("the CSV does not support AllNamespaces")
	}
	if len(csv.Spec.WebhookDefinitions) > 0 || len(csv.Spec.APIServiceDefinitions.Owned) > 0 {
		t.Error("the CSV defines webhooks or API services")
	}
	for _, crd := range b.V1CRDs {
		if crd.Annotations[KeepAnnotation] != "keep" {
			t.Errorf("CRD %s: %s is %q, want keep", crd.Name, KeepAnnotation, crd.Annotations[KeepAnnotation])
		}
	}
	// The manager watches the namespaces OLM's OperatorGroup targets.
	c := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--watch-namespaces=$(WATCH_NAMESPACES)") ||
		!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "WATCH_NAMESPACES" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['olm.targetNamespaces']"
		}) {
		t.Errorf("the manager does not take --watch-namespaces from olm.targetNamespaces: args %q, env %+v", c.Args, c.Env)
	}
	// OLM v1 takes a bundle's image only as a full reference.
	raw, err := os.ReadFile(filepath.Join(root, "catalog", Package, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var images int
	for _, line := range strings.Split(string(raw), "\n") {
		if img, ok := strings.CutPrefix(line, "image: "); ok {
			images++
			if _, err := name.ParseReference(img, name.StrictValidation); err != nil {
				t.Errorf("the catalog's bundle image %s is not a full reference: %v", img, err)
			}
		}
	}
	if images == 0 {
		t.Error("the catalog names no bundle image")
	}
	// Every image the CSV installs is among its related images.
	related := map[string]bool{}
	for _, r := range csv.Spec.RelatedImages {
		related[r.Image] = true
	}
	if !related[c.Image] || !related[csv.Annotations["containerImage"]] {
		t.Errorf("the manager's image %s is not among the related images %v", c.Image, csv.Spec.RelatedImages)
	}
	for _, ex := range examples(t, csv) {
		data, _ := yaml.Marshal(ex.Object)
		for _, line := range strings.Split(string(data), "\n") {
			img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: ")
			if _, err := name.ParseReference(img); ok && err == nil && !related[img] {
				t.Errorf("example %s runs %s, not among the related images", ex.GetKind(), img)
			}
		}
	}
}
