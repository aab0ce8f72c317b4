package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// An etcd snapshot is the database followed by the sha256 of the database;
// the database part is a whole number of 512-byte sectors.
const sectorSize = 512

// hasChecksum tells whether a snapshot of size bytes ends with a sha256.
func hasChecksum(size int64) bool {
	return size%sectorSize == sha256.Size
}

// errCorrupt is the error of a snapshot that fails its integrity check.
var errCorrupt = snapshotstore.ErrCorrupt

// newVerifyingReader passes a snapshot stream through and, at its end,
// checks the trailing sha256 against the content before it: a stream that
// fails ends with an error instead of io.EOF, so a consumer never takes a
// partial or damaged snapshot as whole.
func newVerifyingReader(r io.Reader) io.Reader {
	h := sha256.New()
	return snapshotstore.NewTrailerReader(r, sha256.Size, h, func(trailer []byte, n int64) error {
		if !hasChecksum(n) {
			return fmt.Errorf("%w: %d bytes is not a whole snapshot with its sha256 (truncated?)", errCorrupt, n)
		}
		if !bytes.Equal(h.Sum(nil), trailer) {
			return fmt.Errorf("%w: its sha256 does not match its content", errCorrupt)
		}
		return nil
	})
}

// VerifyFile checks that the file at path is a whole etcd snapshot whose
// trailing sha256 matches its content, and returns its size.
func VerifyFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, newVerifyingReader(f))
	if err != nil {
		return n, &Error{Reason: ReasonCorrupt, Err: fmt.Errorf("snapshot %s: %w", path, err)}
	}
	return n, nil
}
