// Command bundle writes the operator's OLM bundle (registry+v1) and its
// file-based catalog from config/ (see internal/bundle): `make bundle`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/app-operator/app-operator/internal/bundle"
)

func main() {
	var (
		opts       bundle.Options
		out        string
		catalogOut string
		bundleImg  string
	)
	flag.StringVar(&opts.Root, "root", ".", "The repository's root folder.")
	flag.StringVar(&opts.Version, "version", "", "The bundle's version, MAJOR.MINOR.PATCH.")
	flag.StringVar(&opts.Replaces, "replaces", "", "The bundle this one upgrades, e.g. app-operator.v0.1.0; empty for none.")
	flag.StringVar(&opts.Image, "image", "", "The manager's image.")
	flag.StringVar(&out, "output", "bundle", "The bundle's folder; emptied first.")
	flag.StringVar(&catalogOut, "catalog", "catalog/"+bundle.Package+"/catalog.yaml", "The file-based catalog's file; empty writes none.")
	flag.StringVar(&bundleImg, "bundle-image", "", "The bundle's image, as the catalog names it.")
	flag.Parse()
	if err := run(opts, out, catalogOut, bundleImg); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(opts bundle.Options, out, catalogOut, bundleImg string) error {
	if opts.Version == "" || opts.Image == "" {
		return fmt.Errorf("--version and --image are required")
	}
	files, err := bundle.Build(opts)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for _, f := range files {
		p := filepath.Join(out, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	if catalogOut == "" {
		return nil
	}
	if bundleImg == "" {
		return fmt.Errorf("--bundle-image is required for the catalog")
	}
	catalog, err := bundle.Catalog(opts.Root, []bundle.CatalogBundle{{Version: opts.Version, Image: bundleImg}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(catalogOut), 0o755); err != nil {
		return err
	}
	return os.WriteFile(catalogOut, catalog, 0o644)
}
