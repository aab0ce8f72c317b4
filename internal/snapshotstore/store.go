// Package snapshotstore is what the backup tools share: where backups are
// kept (an S3 bucket or a local directory), the reasons a run fails with,
// and how a run reports its result and exit code.
package snapshotstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/app-operator/app-operator/api/conditions"
)

// defaultBaseName is the last element of a prefix that names only a bucket
// or a directory: backups go into it as snapshot_<...>.
const defaultBaseName = "snapshot"

// Store is where backups live: an S3 bucket or a local directory. A name is
// an object key or a file path.
type Store interface {
	// Check fails when the store cannot be used at all: a missing bucket,
	// refused credentials.
	Check(ctx context.Context) error
	// Put writes r under name. The name appears only after all of r was
	// written and r ended without error; a failed put leaves nothing under it.
	Put(ctx context.Context, name string, r io.Reader) (int64, error)
	// Exists tells whether name is a stored backup (not a prefix).
	Exists(ctx context.Context, name string) (bool, error)
	// List returns the names that start with prefix.
	List(ctx context.Context, prefix string) ([]string, error)
	// Open reads the backup under name.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Remove deletes the backup under name.
	Remove(ctx context.Context, name string) error
	// Display is how name is reported: s3://bucket/key or the file path.
	Display(name string) string
}

// Open returns the store of target (s3://bucket/path or a local path) and
// the name or prefix in it that target names.
func Open(target string, s3opts S3Options) (Store, string, error) {
	if rest, ok := strings.CutPrefix(target, "s3://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", Failure(conditions.ReasonInvalidArgument, "the target %q names no bucket", target)
		}
		if key == "" || strings.HasSuffix(key, "/") {
			key += defaultBaseName
		}
		s, err := newS3Store(bucket, s3opts)
		if err != nil {
			return nil, "", err
		}
		return s, key, nil
	}
	if target == "" {
		return nil, "", Failure(conditions.ReasonInvalidArgument, "no target given")
	}
	if strings.Contains(target, "://") {
		return nil, "", Failure(conditions.ReasonInvalidArgument, "the target %q is neither s3://bucket/path nor a local path", target)
	}
	name := filepath.Clean(target)
	if strings.HasSuffix(target, "/") {
		name = filepath.Join(name, defaultBaseName)
	} else if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		name = filepath.Join(name, defaultBaseName)
	}
	return LocalStore{}, name, nil
}

// Reach opens the store of target, as Open does, and checks that it can be
// used.
func Reach(ctx context.Context, target string, s3opts S3Options) (Store, string, error) {
	st, name, err := Open(target, s3opts)
	if err != nil {
		return nil, "", err
	}
	if err := st.Check(ctx); err != nil {
		return nil, "", err
	}
	return st, name, nil
}

// TimeLayout is the layout of the UTC time in a backup's name.
const TimeLayout = "20060102-150405"

// LocalStore keeps backups as files; names are file paths.
type LocalStore struct{}

func (LocalStore) Check(context.Context) error { return nil }

func (LocalStore) Put(_ context.Context, name string, r io.Reader) (n int64, err error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, LocalFailure(err, "cannot create the directory "+dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".part-*")
	if err != nil {
		return 0, LocalFailure(err, "cannot create a file in "+dir)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err = io.Copy(tmp, r)
	if err != nil {
		return n, LocalFailure(err, "cannot write the snapshot to "+tmp.Name())
	}
	if err = tmp.Sync(); err != nil {
		return n, LocalFailure(err, "cannot sync "+tmp.Name())
	}
	if err = tmp.Close(); err != nil {
		return n, LocalFailure(err, "cannot close "+tmp.Name())
	}
	if err = os.Rename(tmp.Name(), name); err != nil {
		return n, LocalFailure(err, "cannot rename the snapshot to "+name)
	}
	SyncDir(dir)
	return n, nil
}

func (LocalStore) Exists(_ context.Context, name string) (bool, error) {
	fi, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, LocalFailure(err, "cannot read "+name)
	}
	return fi.Mode().IsRegular(), nil
}

func (LocalStore) List(_ context.Context, prefix string) ([]string, error) {
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, LocalFailure(err, "cannot list "+dir)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), base) {
			names = append(names, filepath.Join(dir, e.Name()))
		}
	}
	return names, nil
}

func (LocalStore) Open(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, LocalFailure(err, "cannot open "+name)
	}
	return f, nil
}

func (LocalStore) Remove(_ context.Context, name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return LocalFailure(err, "cannot remove "+name)
	}
	return nil
}

func (LocalStore) Display(name string) string { return name }

// LocalFailure gives a file-system error its reason: a full disk or quota is
// TargetFull, a permission error AccessDenied.
func LocalFailure(err error, what string) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &Error{Reason: conditions.ReasonTargetFull, Err: fmt.Errorf("%s: the target is full: %w", what, err)}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return &Error{Reason: conditions.ReasonAccessDenied, Err: fmt.Errorf("%s: access denied: %w", what, err)}
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Reason: conditions.ReasonNotFound, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return Failure(conditions.ReasonFailed, "%s: %w", what, err)
}

// SyncDir flushes a directory's entries, so that a rename in it survives a
// crash. Errors are ignored: some file systems cannot sync a directory.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}
