package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
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

// verifyingReader passes a snapshot stream through and, at its end, checks
// the trailing sha256 against the content before it: a stream that fails
// ends with an error instead of io.EOF, so a consumer never takes a partial
// or damaged snapshot as whole.
type verifyingReader struct {
	r    io.Reader
	h    hash.Hash
	tail []byte // the last sha256.Size bytes seen, not yet hashed
	n    int64
	done bool
}

func newVerifyingReader(r io.Reader) io.Reader {
	return &verifyingReader{r: r, h: sha256.New()}
}

// Read reads from the stream, hashing all but its last sha256.Size bytes.
func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.done {
		return 0, io.EOF
	}
	n, err := v.r.Read(p)
	if n > 0 {
		v.n += int64(n)
		v.tail = append(v.tail, p[:n]...)
		if extra := len(v.tail) - sha256.Size; extra > 0 {
			v.h.Write(v.tail[:extra])
			v.tail = append(v.tail[:0], v.tail[extra:]...)
		}
	}
	if err == io.EOF {
		if cerr := v.check(); cerr != nil {
			return n, cerr
		}
		v.done = true
	}
	return n, err
}

// check compares the trailing sha256 with the hash of what came before it.
func (v *verifyingReader) check() error {
	if !hasChecksum(v.n) {
		return fmt.Errorf("%w: %d bytes is not a whole snapshot with its sha256 (truncated?)", errCorrupt, v.n)
	}
	if !bytes.Equal(v.h.Sum(nil), v.tail) {
		return fmt.Errorf("%w: its sha256 does not match its content", errCorrupt)
	}
	return nil
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
