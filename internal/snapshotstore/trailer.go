package snapshotstore

import "io"

// trailerReader passes a stream through, writing all of it but its last
// size bytes (its trailer, such as a checksum) to sum; at the end of the
// stream it calls check with the trailer and the stream's length.
type trailerReader struct {
	r     io.Reader
	size  int
	sum   io.Writer
	check func(trailer []byte, n int64) error
	tail  []byte // the last size bytes seen, not yet written to sum
	n     int64
	done  bool
}

// NewTrailerReader returns a reader of r that writes all of r but its last
// size bytes to sum, and at the end of r calls check with those bytes and
// r's length: when check fails, the stream ends with its error instead of
// io.EOF, so a consumer never takes a partial or damaged stream as whole.
func NewTrailerReader(r io.Reader, size int, sum io.Writer, check func(trailer []byte, n int64) error) io.Reader {
	return &trailerReader{r: r, size: size, sum: sum, check: check}
}

// Read reads from the stream, summing all but its last size bytes.
func (t *trailerReader) Read(p []byte) (int, error) {
	if t.done {
		return 0, io.EOF
	}
	n, err := t.r.Read(p)
	if n > 0 {
		t.n += int64(n)
		t.tail = append(t.tail, p[:n]...)
		if extra := len(t.tail) - t.size; extra > 0 {
			_, _ = t.sum.Write(t.tail[:extra])
			t.tail = append(t.tail[:0], t.tail[extra:]...)
		}
	}
	if err == io.EOF {
		if cerr := t.check(t.tail, t.n); cerr != nil {
			return n, cerr
		}
		t.done = true
	}
	return n, err
}
