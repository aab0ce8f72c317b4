package redissnapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// RestoreOptions says which backup to restore and where.
type RestoreOptions struct {
	// From is s3://bucket/path or a local path: an exact backup, or a prefix
	// under which the newest backup is taken.
	From string
	// S3 says how to reach S3 when From is an s3:// URL.
	S3 snapshotstore.S3Options
	// DataDir is the node's data directory (Redis's dir).
	DataDir string
}

// A restore lays the RDB out as Redis 7's multi-part append-only file: a
// directory with the RDB as its base and a manifest that names it. Redis
// with appendonly yes loads it, and adds its own files to the manifest.
const (
	aofDir      = "appendonlydir"
	aofBase     = "appendonly.aof.1.base.rdb"
	aofManifest = "appendonly.aof.manifest"
	// manifestText is the manifest of an append-only file of the base alone.
	manifestText = "file " + aofBase + " seq 1 type b\n"
)

// Restore lays a node's data directory out from a backup. When the data
// directory already holds Redis data it does nothing (AlreadyRestored). It
// checks the RDB's CRC-64 and builds the append-only directory in a work
// directory inside the data directory, then renames it into place, so that
// a crash never leaves a half-restored node.
func Restore(ctx context.Context, opts RestoreOptions) (Result, error) {
	res, err := restore(ctx, opts)
	return res, snapshotstore.TimedOut(ctx, err, "restore")
}

func restore(ctx context.Context, opts RestoreOptions) (Result, error) {
	if opts.DataDir == "" {
		return Result{}, snapshotstore.Failure(conditions.ReasonInvalidArgument, "the data dir is required")
	}
	dataDir := filepath.Clean(opts.DataDir)
	has, err := hasData(dataDir)
	if err != nil || has {
		return Result{Report: backuprun.Report{AlreadyRestored: has}}, err
	}

	st, name, err := snapshotstore.Reach(ctx, opts.From, opts.S3)
	if err != nil {
		return Result{}, err
	}
	chosen, err := findBackup(ctx, st, name)
	if err != nil {
		return Result{}, err
	}

	// The work directory is inside the data dir: the data dir may be a
	// mount point, and a rename only works within one file system.
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot create "+dataDir)
	}
	work := filepath.Join(dataDir, ".restore")
	if err := os.RemoveAll(work); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot clear "+work)
	}
	laidOut := filepath.Join(work, aofDir)
	if err := os.MkdirAll(laidOut, 0o755); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot create "+laidOut)
	}
	defer os.RemoveAll(work)

	base := filepath.Join(laidOut, aofBase)
	size, err := snapshotstore.Download(ctx, st, chosen, base, newCheckingReader)
	if err != nil {
		return Result{}, err
	}
	hdr, err := fileHeader(base)
	if err != nil {
		return Result{}, err
	}
	if err := os.Chmod(base, 0o644); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot make "+base+" readable")
	}
	if err := writeSynced(filepath.Join(laidOut, aofManifest), manifestText); err != nil {
		return Result{}, err
	}
	snapshotstore.SyncDir(laidOut)
	if err := os.Rename(laidOut, filepath.Join(dataDir, aofDir)); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot move the restored data into "+dataDir)
	}
	snapshotstore.SyncDir(dataDir)
	return Result{
		Report:        backuprun.Report{Key: st.Display(chosen), Size: size},
		Offset:        hdr.Offset,
		ReplicationID: hdr.ReplicationID,
		RedisVersion:  hdr.RedisVersion,
		Keys:          hdr.Keys,
	}, nil
}

// hasData tells whether dir holds Redis data already: an append-only
// directory or file, or an RDB.
func hasData(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
			return false, snapshotstore.Failure(conditions.ReasonInvalidArgument, "the data dir %s is not a directory", dir)
		}
		return false, snapshotstore.LocalFailure(err, "cannot read "+dir)
	}
	for _, e := range entries {
		if e.Name() == "dump.rdb" || strings.HasPrefix(e.Name(), "appendonly") {
			return true, nil
		}
	}
	return false, nil
}

// writeSynced writes text to the new file path and syncs it.
func writeSynced(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return snapshotstore.LocalFailure(err, "cannot create "+path)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		return snapshotstore.LocalFailure(err, "cannot write "+path)
	}
	if err := f.Sync(); err != nil {
		return snapshotstore.LocalFailure(err, "cannot sync "+path)
	}
	return nil
}

// findBackup returns name itself when it is a stored backup, else the
// newest backup under the prefix name.
func findBackup(ctx context.Context, st snapshotstore.Store, name string) (string, error) {
	exact, err := st.Exists(ctx, name)
	if err != nil {
		return "", err
	}
	if exact {
		return name, nil
	}
	names, err := st.List(ctx, name)
	if err != nil {
		return "", err
	}
	backups := backupsUnder(name, names)
	if len(backups) == 0 {
		return "", &snapshotstore.Error{Reason: conditions.ReasonNotFound, Err: fmt.Errorf("no backup found at or under %s", st.Display(name))}
	}
	return backups[len(backups)-1].Name, nil
}
