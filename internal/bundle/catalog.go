package bundle

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// CatalogBundle is one version in the catalog: its version and the image
// the bundle is pushed as.
type CatalogBundle struct {
	Version string
	Image   string
}

// Catalog is the file-based catalog (olm.package, olm.channel and one
// olm.bundle per version) of the given versions, oldest first: each one
// replaces the one before in the channel.
func Catalog(root string, bundles []CatalogBundle) ([]byte, error) {
	if len(bundles) == 0 {
		return nil, fmt.Errorf("a catalog needs a bundle")
	}
	crds, _, _, err := readCRDs(filepath.Join(root, "config/crd/bases"))
	if err != nil {
		return nil, err
	}
	icon, err := os.ReadFile(filepath.Join(root, "config/manifests/icon.svg"))
	if err != nil {
		return nil, err
	}
	description, err := packageDescription(root)
	if err != nil {
		return nil, err
	}
	docs := []any{fbcPackage{
		Schema:         "olm.package",
		Name:           Package,
		DefaultChannel: Channel,
		Description:    description,
		Icon:           &fbcIcon{Data: base64.StdEncoding.EncodeToString(icon), MediaType: "image/svg+xml"},
	}}
	channel := fbcChannel{Schema: "olm.channel", Package: Package, Name: Channel}
	for i, b := range bundles {
		e := fbcEntry{Name: CSVName(b.Version)}
		if i > 0 {
			e.Replaces = CSVName(bundles[i-1].Version)
		}
		channel.Entries = append(channel.Entries, e)
	}
	docs = append(docs, channel)
	for _, b := range bundles {
		props := []fbcProperty{{Type: "olm.package", Value: map[string]string{"packageName": Package, "version": b.Version}}}
		for _, crd := range crds {
			props = append(props, fbcProperty{Type: "olm.gvk", Value: map[string]string{
				"group": crd.Spec.Group, "kind": crd.Spec.Names.Kind, "version": storageVersion(crd),
			}})
		}
		docs = append(docs, fbcBundle{Schema: "olm.bundle", Name: CSVName(b.Version), Package: Package, Image: b.Image, Properties: props})
	}
	var out strings.Builder
	out.WriteString(generatedHeader)
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return []byte(out.String()), nil
}

// The file-based catalog's documents
// (github.com/operator-framework/operator-registry's declcfg).
type (
	fbcPackage struct {
		Schema         string   `json:"schema"`
		Name           string   `json:"name"`
		DefaultChannel string   `json:"defaultChannel"`
		Description    string   `json:"description,omitempty"`
		Icon           *fbcIcon `json:"icon,omitempty"`
	}
	fbcIcon struct {
		Data      string `json:"base64data"`
		MediaType string `json:"mediatype"`
	}
	fbcChannel struct {
		Schema  string     `json:"schema"`
		Package string     `json:"package"`
		Name    string     `json:"name"`
		Entries []fbcEntry `json:"entries"`
	}
	fbcEntry struct {
		Name     string `json:"name"`
		Replaces string `json:"replaces,omitempty"`
	}
	fbcBundle struct {
		Schema     string        `json:"schema"`
		Name       string        `json:"name"`
		Package    string        `json:"package"`
		Image      string        `json:"image"`
		Properties []fbcProperty `json:"properties"`
	}
	fbcProperty struct {
		Type  string            `json:"type"`
		Value map[string]string `json:"value"`
	}
)

func storageVersion(crd apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// packageDescription is the CSV's short description.
func packageDescription(root string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, "config/manifests/bases", Package+".clusterserviceversion.yaml"))
	if err != nil {
		return "", err
	}
	var base struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &base); err != nil {
		return "", err
	}
	return base.Metadata.Annotations["description"], nil
}
