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
	docs := []any{
		map[string]any{
			"schema":         "olm.package",
			"name":           Package,
			"defaultChannel": Channel,
			"description":    description,
			"icon":           map[string]any{"base64data": base64.StdEncoding.EncodeToString(icon), "mediatype": "image/svg+xml"},
		},
	}
	var entries []any
	for i, b := range bundles {
		e := map[string]any{"name": CSVName(b.Version)}
		if i > 0 {
			e["replaces"] = CSVName(bundles[i-1].Version)
		}
		entries = append(entries, e)
	}
	docs = append(docs, map[string]any{
		"schema":  "olm.channel",
		"package": Package,
		"name":    Channel,
		"entries": entries,
	})
	for _, b := range bundles {
		props := []any{
			map[string]any{"type": "olm.package", "value": map[string]any{"packageName": Package, "version": b.Version}},
		}
		for _, crd := range crds {
			props = append(props, map[string]any{"type": "olm.gvk", "value": map[string]any{
				"group": crd.Spec.Group, "kind": crd.Spec.Names.Kind, "version": storageVersion(crd),
			}})
		}
		docs = append(docs, map[string]any{
			"schema":     "olm.bundle",
			"name":       CSVName(b.Version),
			"package":    Package,
			"image":      b.Image,
			"properties": props,
		})
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
