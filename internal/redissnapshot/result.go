// Package redissnapshot is the data path of Redis backups and restores: it
// reads the dataset of the best node of a Redis cluster over the
// replication protocol and stores it, an RDB file, in an S3 bucket or a
// local directory, and it lays a node's data directory out from such a
// backup. The redis-snapshot binary runs it in the backup Job's pod and in
// the restore init container; the manager never links it.
package redissnapshot

import (
	"github.com/app-operator/app-operator/internal/backuprun"
)

// Result is what a save or restore reports, as the controller reads it
// from the termination message: the backup, or on a failure Error and
// Reason.
type Result = backuprun.RedisResult

// The roles a node is read in, as the result names them.
const (
	rolePrimary = "primary"
	roleReplica = "replica"
)
