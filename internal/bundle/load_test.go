package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/encoding"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// readBundle loads a bundle folder into what OLM's validators take, as
// manifests.GetBundleFromDir does: each file of manifests/ as an object
// (the CSV and the CRDs typed too), the package and channels from
// metadata/annotations.yaml, and the bundle's size, plain and compressed.
// (GetBundleFromDir itself decodes each file twice through one decoder,
// which the YAML decoder of the apimachinery this module builds with no
// longer allows.)
func readBundle(dir string) (*manifests.Bundle, error) {
	b := &manifests.Bundle{}
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		b.Objects = append(b.Objects, u)
		switch u.GetKind() {
		case "ClusterServiceVersion":
			if b.CSV != nil {
				return nil, fmt.Errorf("two CSVs in %s", dir)
			}
			b.CSV = &operatorsv1alpha1.ClusterServiceVersion{}
			if err := yaml.UnmarshalStrict(raw, b.CSV); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			b.Name = b.CSV.Name
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(raw, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			b.V1CRDs = append(b.V1CRDs, crd)
		}
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("no CSV in %s", dir)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(raw, &ann); err != nil {
		return nil, err
	}
	b.Package = ann.Annotations["operators.operatorframework.io.bundle.package.v1"]
	b.Channels = strings.Split(ann.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",")
	b.DefaultChannel = ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.Size += int64(len(data))
		gz, err := encoding.GzipBase64Encode(data)
		b.CompressedSize += int64(len(gz))
		return err
	})
	return b, err
}
