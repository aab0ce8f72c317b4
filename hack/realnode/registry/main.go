// Command registry is the image registry of the distribution module with
// only what the real node's registry uses: images on the local file system,
// no authentication, no pull-through proxy. The module's own command links
// the cloud storage drivers (Azure, GCS, S3) too, twice as many packages to
// compile.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
