package etcdsnapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// RestoreOptions says which backup to restore and the member it seeds, as
// etcdutl's snapshot restore takes them.
type RestoreOptions struct {
	// From is s3://bucket/path or a local path: an exact backup, or a prefix
	// under which the newest backup of the newest cluster is taken (see
	// chooseBackup).
	From string
	// S3 says how to reach S3 when From is an s3:// URL.
	S3 S3Options
	// DataDir is the member's data dir.
	DataDir string
	// Name is the member's name.
	Name string
	// InitialCluster is the initial cluster configuration (name=peerURL,...).
	InitialCluster string
	// InitialClusterToken is the new cluster's token.
	InitialClusterToken string
	// InitialAdvertisePeerURLs are the member's peer URLs.
	InitialAdvertisePeerURLs []string
	// Logger logs etcd's restore messages; nil logs nothing.
	Logger *zap.Logger
}

// memberDir is the directory that marks a data dir as holding a member.
const memberDir = "member"

// Restore writes a member's data dir from a backup. When the data dir
// already holds a member it does nothing (AlreadyRestored). It checks the
// snapshot's sha256, restores with etcd's own restore code into a temporary
// directory and renames the result into place, so that a crash never leaves
// a half-restored data dir.
func Restore(ctx context.Context, opts RestoreOptions) (Result, error) {
	res, err := restore(ctx, opts)
	return res, snapshotstore.TimedOut(ctx, err, "restore")
}

func restore(ctx context.Context, opts RestoreOptions) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.DataDir == "" || opts.Name == "" || opts.InitialCluster == "" || len(opts.InitialAdvertisePeerURLs) == 0 {
		return Result{}, failure(ReasonInvalidArgument, "the data dir, name, initial cluster and initial advertise peer URLs are all required")
	}
	dataDir := filepath.Clean(opts.DataDir)
	if _, err := os.Stat(filepath.Join(dataDir, memberDir)); err == nil {
		return Result{Report: backuprun.Report{AlreadyRestored: true}}, nil
	}

	st, name, err := snapshotstore.Reach(ctx, opts.From, opts.S3)
	if err != nil {
		return Result{}, err
	}
	chosen, revision, err := findBackup(ctx, st, name)
	if err != nil {
		return Result{}, err
	}

	// The work directory: a sibling of the data dir when the data dir does
	// not exist yet, else a hidden directory inside it (the data dir may be
	// a mount point, which cannot be renamed, and a sibling of a mount point
	// may be on another file system).
	dataDirExists := false
	if fi, err := os.Stat(dataDir); err == nil {
		if !fi.IsDir() {
			return Result{}, failure(ReasonInvalidArgument, "the data dir %s is not a directory", dataDir)
		}
		dataDirExists = true
	}
	work := filepath.Join(filepath.Dir(dataDir), "."+filepath.Base(dataDir)+".restore")
	if dataDirExists {
		work = filepath.Join(dataDir, ".restore")
	}
	if err := os.RemoveAll(work); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot clear "+work)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot create "+work)
	}
	defer os.RemoveAll(work)

	dbPath := filepath.Join(work, "snapshot.db")
	size, err := snapshotstore.Download(ctx, st, chosen, dbPath, newVerifyingReader)
	if err != nil {
		return Result{}, err
	}
	restored := filepath.Join(work, "data")
	err = snapshot.NewV3(opts.Logger).Restore(snapshot.RestoreConfig{
		SnapshotPath:        dbPath,
		Name:                opts.Name,
		OutputDataDir:       restored,
		PeerURLs:            opts.InitialAdvertisePeerURLs,
		InitialCluster:      opts.InitialCluster,
		InitialClusterToken: opts.InitialClusterToken,
	})
	if err != nil {
		return Result{}, failure(ReasonFailed, "etcd could not restore %s: %w", st.Display(chosen), err)
	}

	if dataDirExists {
		err = os.Rename(filepath.Join(restored, memberDir), filepath.Join(dataDir, memberDir))
	} else {
		err = os.Rename(restored, dataDir)
	}
	if err != nil {
		return Result{}, snapshotstore.LocalFailure(err, "cannot move the restored member into "+dataDir)
	}
	snapshotstore.SyncDir(dataDir)
	snapshotstore.SyncDir(filepath.Dir(dataDir))
	return Result{Report: backuprun.Report{Key: st.Display(chosen), Size: size}, Revision: revision}, nil
}

// findBackup returns name itself when it is a stored backup, else the
// backup a restore from the prefix name takes (see chooseBackup).
func findBackup(ctx context.Context, st snapshotstore.Store, name string) (string, int64, error) {
	exact, err := st.Exists(ctx, name)
	if err != nil {
		return "", 0, err
	}
	if exact {
		info, _ := ParseExactName(name)
		return name, info.Revision, nil
	}
	names, err := st.List(ctx, name)
	if err != nil {
		return "", 0, err
	}
	backups := backupsUnder(name, names)
	if len(backups) == 0 {
		return "", 0, &Error{Reason: ReasonNotFound, Err: fmt.Errorf("no backup found at or under %s", st.Display(name))}
	}
	chosen, err := chooseBackup(st.Display(name), backups)
	if err != nil {
		return "", 0, err
	}
	return chosen.Name, chosen.Revision, nil
}
