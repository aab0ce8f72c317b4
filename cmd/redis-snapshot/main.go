// Command redis-snapshot is the data path of Redis backups and restores,
// run in pods beside the operator: "save" reads the dataset of a Redis
// cluster into S3 or a directory, "restore" lays a node's data directory
// out from one. It prints its result as one JSON object and writes it to
// the container's termination message. See docs/backup.md.
package main

import (
	"os"

	"github.com/app-operator/app-operator/internal/redissnapshot"
)

func main() {
	os.Exit(redissnapshot.Main(os.Args[1:], os.Stdout, os.Stderr))
}
