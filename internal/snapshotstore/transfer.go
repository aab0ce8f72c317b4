package snapshotstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/minio/minio-go/v7"

	"github.com/app-operator/app-operator/api/conditions"
)

// ErrCorrupt is the error of a snapshot that fails its integrity check. A
// tool's checking reader ends a damaged stream with it.
var ErrCorrupt = errors.New("the snapshot failed its integrity check")

// Download copies the backup name into the new file path through check,
// which ends a damaged stream with ErrCorrupt, and returns its size. The
// file is synced; the caller removes it after a failure.
func Download(ctx context.Context, st Store, name, path string, check func(io.Reader) io.Reader) (int64, error) {
	r, err := st.Open(ctx, name)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, LocalFailure(err, "cannot create "+path)
	}
	defer f.Close()
	n, err := io.Copy(f, check(r))
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return n, &Error{Reason: conditions.ReasonCorrupt, Err: fmt.Errorf("the backup %s is incomplete or damaged, refusing to restore it: %w", st.Display(name), err)}
		}
		if s3, ok := st.(*s3Store); ok && minio.ToErrorResponse(err).Code != "" {
			return n, s3.failure(err, "cannot read "+st.Display(name))
		}
		return n, LocalFailure(err, "cannot copy "+st.Display(name)+" to "+path)
	}
	if err := f.Sync(); err != nil {
		return n, LocalFailure(err, "cannot sync "+path)
	}
	return n, nil
}

// Upload stores r under name through check, which ends a damaged stream
// with ErrCorrupt, and returns the stored size. source names where r
// comes from, for the message of a damaged stream.
func Upload(ctx context.Context, st Store, name string, r io.Reader, source string) (int64, error) {
	size, err := st.Put(ctx, name, r)
	if err != nil && errors.Is(err, ErrCorrupt) {
		return 0, &Error{Reason: conditions.ReasonCorrupt, Err: fmt.Errorf("the snapshot from %s was incomplete or damaged, nothing was stored: %w", source, err)}
	}
	return size, err
}

// Prune deletes the oldest of backups (given oldest first) beyond keep,
// never saved, the one just stored.
func Prune(ctx context.Context, st Store, backups []string, saved string, keep int) error {
	excess := len(backups) - keep
	for _, name := range backups {
		if excess <= 0 {
			break
		}
		if name == saved {
			continue
		}
		if err := st.Remove(ctx, name); err != nil {
			return err
		}
		excess--
	}
	return nil
}
