package redissnapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"os"
	"strconv"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// An RDB file is "REDIS", a four-digit version, opcodes and their
// payloads, the EOF opcode and the CRC-64 of all that came before it, in
// eight little-endian bytes (0 when the server does not compute it).
const (
	rdbMagic      = "REDIS"
	rdbHeaderSize = len(rdbMagic) + 4
	rdbTrailer    = 1 + 8

	opAux      = 0xfa
	opResizeDB = 0xfb
	opSelectDB = 0xfe
	opEOF      = 0xff
)

// maxHeader bounds how much of the start of an RDB is read for its aux
// fields.
const maxHeader = 1 << 20

// crcTable is the table of Redis's CRC-64 (Jones polynomial
// 0xad93d23594c935a9, reflected; the table takes it bit-reversed).
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// crc64Update adds p to the Redis CRC-64 crc. Redis starts from 0 and does
// not invert, where hash/crc64 inverts before and after.
func crc64Update(crc uint64, p []byte) uint64 {
	return ^crc64.Update(^crc, crcTable, p)
}

// rdbSum is the CRC-64 of an RDB and its first rdbHeaderSize bytes.
type rdbSum struct {
	crc  uint64
	head []byte
}

func (s *rdbSum) Write(p []byte) (int, error) {
	if missing := rdbHeaderSize - len(s.head); missing > 0 {
		s.head = append(s.head, p[:min(missing, len(p))]...)
	}
	s.crc = crc64Update(s.crc, p)
	return len(p), nil
}

// newCheckingReader passes an RDB stream through and, at its end, checks
// the magic, the EOF opcode and the trailing CRC-64: a stream that fails
// ends with an error wrapping snapshotstore.ErrCorrupt instead of io.EOF.
func newCheckingReader(r io.Reader) io.Reader {
	sum := &rdbSum{}
	return snapshotstore.NewTrailerReader(r, rdbTrailer, sum, func(trailer []byte, n int64) error {
		if n < int64(rdbHeaderSize+rdbTrailer) {
			return fmt.Errorf("%w: %d bytes is not a whole RDB (truncated?)", snapshotstore.ErrCorrupt, n)
		}
		if err := checkMagic(sum.head); err != nil {
			return err
		}
		// The trailer is the EOF opcode and the CRC-64 of all before it,
		// the opcode included.
		if trailer[0] != opEOF {
			return fmt.Errorf("%w: it does not end with the EOF opcode (truncated?)", snapshotstore.ErrCorrupt)
		}
		got := crc64Update(sum.crc, trailer[:1])
		want := binary.LittleEndian.Uint64(trailer[1:])
		if want != 0 && want != got {
			return fmt.Errorf("%w: its CRC-64 %016x does not match its content (%016x)", snapshotstore.ErrCorrupt, want, got)
		}
		return nil
	})
}

// checkMagic checks that head starts as an RDB does.
func checkMagic(head []byte) error {
	if len(head) < rdbHeaderSize || !bytes.HasPrefix(head, []byte(rdbMagic)) {
		return fmt.Errorf("%w: it does not start with %q", snapshotstore.ErrCorrupt, rdbMagic)
	}
	if _, err := strconv.ParseUint(string(head[len(rdbMagic):rdbHeaderSize]), 10, 16); err != nil {
		return fmt.Errorf("%w: its RDB version %q is not a number", snapshotstore.ErrCorrupt, head[len(rdbMagic):rdbHeaderSize])
	}
	return nil
}

// rdbHeader is what the aux fields at the start of an RDB say.
type rdbHeader struct {
	RedisVersion  string
	ReplicationID string
	Offset        int64
	// Keys is the size of the first database, when the RDB says it
	// before its first key.
	Keys int64
}

// errHeaderLimit ends the reading of a header longer than maxHeader.
var errHeaderLimit = errors.New("the RDB header is too long")

// headerReader reads the start of an RDB byte by byte, keeping what it
// read, up to maxHeader bytes.
type headerReader struct {
	r    io.ByteReader
	seen bytes.Buffer
}

func (h *headerReader) ReadByte() (byte, error) {
	if h.seen.Len() >= maxHeader {
		return 0, errHeaderLimit
	}
	b, err := h.r.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	h.seen.WriteByte(b)
	return b, nil
}

// readHeader reads the magic and the aux fields at the start of an RDB,
// up to the first opcode that is neither an aux field nor the selection or
// size of a database. A header that does not fit in maxHeader bytes, or
// has a compressed aux string, ends the reading early without an error.
func readHeader(h *headerReader) (rdbHeader, error) {
	var hdr rdbHeader
	magic := make([]byte, rdbHeaderSize)
	for i := range magic {
		b, err := h.ReadByte()
		if err != nil {
			return hdr, corruptHeader(err)
		}
		magic[i] = b
	}
	if err := checkMagic(magic); err != nil {
		return hdr, err
	}
	for {
		op, err := h.ReadByte()
		if err != nil {
			return hdr, corruptHeader(err)
		}
		switch op {
		case opAux:
			key, err := readString(h)
			if err != nil {
				return hdr, corruptHeader(err)
			}
			value, err := readString(h)
			if err != nil {
				return hdr, corruptHeader(err)
			}
			hdr.set(key, value)
		case opSelectDB:
			if _, _, err := readLength(h); err != nil {
				return hdr, corruptHeader(err)
			}
		case opResizeDB:
			size, _, err := readLength(h)
			if err != nil {
				return hdr, corruptHeader(err)
			}
			hdr.Keys = int64(size)
			return hdr, nil
		default:
			return hdr, nil
		}
	}
}

// set takes the aux field key=value when it is one the result reports.
func (hdr *rdbHeader) set(key, value string) {
	switch key {
	case "redis-ver":
		hdr.RedisVersion = value
	case "repl-id":
		hdr.ReplicationID = value
	case "repl-offset":
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			hdr.Offset = n
		}
	}
}

// corruptHeader is the error of a header that cannot be read: a
// truncated or malformed RDB, unless the header was only too long.
func corruptHeader(err error) error {
	if errors.Is(err, errHeaderLimit) || errors.Is(err, errCompressed) {
		return nil
	}
	var e *snapshotstore.Error
	if errors.As(err, &e) || errors.Is(err, snapshotstore.ErrCorrupt) {
		return err
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: its header is truncated", snapshotstore.ErrCorrupt)
	}
	return err
}

// errCompressed ends the reading of the header at an LZF-compressed aux
// string, which is not decoded.
var errCompressed = errors.New("a compressed string in the RDB header")

// The special encodings of a string (a length whose two top bits are 11).
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// readLength reads an RDB length. encoded says that it is rather the
// special encoding of a string (int8, int16, int32 or LZF).
func readLength(r io.ByteReader) (n uint64, encoded bool, err error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, false, err
	}
	switch first >> 6 {
	case 0:
		return uint64(first & 0x3f), false, nil
	case 1:
		next, err := r.ReadByte()
		if err != nil {
			return 0, false, err
		}
		return uint64(first&0x3f)<<8 | uint64(next), false, nil
	case 3:
		return uint64(first & 0x3f), true, nil
	}
	var size int
	switch first {
	case 0x80:
		size = 4
	case 0x81:
		size = 8
	default:
		return 0, false, fmt.Errorf("%w: the length encoding %#x is unknown", snapshotstore.ErrCorrupt, first)
	}
	for range size {
		b, err := r.ReadByte()
		if err != nil {
			return 0, false, err
		}
		n = n<<8 | uint64(b)
	}
	return n, false, nil
}

// readString reads an RDB string: length-prefixed, or an integer in 1, 2
// or 4 little-endian bytes.
func readString(r io.ByteReader) (string, error) {
	n, encoded, err := readLength(r)
	if err != nil {
		return "", err
	}
	if encoded {
		var size int
		switch n {
		case encInt8:
			size = 1
		case encInt16:
			size = 2
		case encInt32:
			size = 4
		case encLZF:
			return "", errCompressed
		default:
			return "", fmt.Errorf("%w: the string encoding %d is unknown", snapshotstore.ErrCorrupt, n)
		}
		var v uint32
		for i := range size {
			b, err := r.ReadByte()
			if err != nil {
				return "", err
			}
			v |= uint32(b) << (8 * i)
		}
		switch size {
		case 1:
			return strconv.Itoa(int(int8(v))), nil
		case 2:
			return strconv.Itoa(int(int16(v))), nil
		}
		return strconv.Itoa(int(int32(v))), nil
	}
	if n > maxHeader {
		return "", errHeaderLimit
	}
	buf := make([]byte, n)
	for i := range buf {
		if buf[i], err = r.ReadByte(); err != nil {
			return "", err
		}
	}
	return string(buf), nil
}

// fileHeader reads the header of the RDB file at path.
func fileHeader(path string) (rdbHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return rdbHeader{}, snapshotstore.LocalFailure(err, "cannot open "+path)
	}
	defer f.Close()
	hdr, err := readHeader(&headerReader{r: bufio.NewReader(f)})
	if err != nil {
		return hdr, corruptFile(path, err)
	}
	return hdr, nil
}

// corruptFile gives a damaged file's error the reason Corrupt.
func corruptFile(path string, err error) error {
	if errors.Is(err, snapshotstore.ErrCorrupt) {
		return &snapshotstore.Error{Reason: conditions.ReasonCorrupt, Err: fmt.Errorf("the RDB %s is incomplete or damaged: %w", path, err)}
	}
	return snapshotstore.LocalFailure(err, "cannot read "+path)
}
