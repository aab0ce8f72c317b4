// Command etcd-snapshot is the data path of etcd backups and restores, run
// in pods beside the operator: "save" takes a snapshot of an etcd cluster
// into S3 or a directory, "restore" writes a new member's data dir from one.
// It prints its result as one JSON object and writes it to the container's
// termination message. See docs/backup.md.
package main

import (
	"os"

	"github.com/app-operator/app-operator/internal/etcdsnapshot"
)

func main() {
	os.Exit(etcdsnapshot.Main(os.Args[1:], os.Stdout, os.Stderr))
}
