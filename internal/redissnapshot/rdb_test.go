package redissnapshot

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// fixture is a real RDB; see testdata/README.md.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/replica.rdb")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rdbString is s as an RDB string with a 6-bit length.
func rdbString(s string) []byte {
	return append([]byte{byte(len(s))}, s...)
}

// aux is an aux field whose value is already encoded.
func aux(key string, value []byte) []byte {
	return append(append([]byte{opAux}, rdbString(key)...), value...)
}

// sealRDB ends body (an RDB without its end) with the EOF opcode and the
// CRC-64 of all before it.
func sealRDB(body []byte) []byte {
	out := append(bytes.Clone(body), opEOF)
	return binary.LittleEndian.AppendUint64(out, crc64Update(0, out))
}

// testRDB is an RDB of a node at offset, with keys string keys.
func testRDB(offset, keys int) []byte {
	b := []byte("REDIS0010")
	b = append(b, aux("redis-ver", rdbString("7.0.15"))...)
	b = append(b, aux("repl-id", rdbString(strings.Repeat("ab", 20)))...)
	b = append(b, aux("repl-offset", rdbString(strconv.Itoa(offset)))...)
	b = append(b, opSelectDB, 0, opResizeDB, byte(keys), 0)
	for i := range keys {
		b = append(b, 0)
		b = append(b, rdbString("key:"+strconv.Itoa(i))...)
		b = append(b, rdbString("value")...)
	}
	return sealRDB(b)
}

// TestCRC64 checks Redis's CRC-64 against its check value and the
// fixture's own trailer.
func TestCRC64(t *testing.T) {
	if got := crc64Update(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Errorf("crc64(123456789) = %016x, want e9c6d914c4b8d9ca", got)
	}
	// In two parts, as a stream is summed.
	if got := crc64Update(crc64Update(0, []byte("1234")), []byte("56789")); got != 0xe9c6d914c4b8d9ca {
		t.Errorf("crc64 in parts = %016x", got)
	}
	b := fixture(t)
	if got, want := crc64Update(0, b[:len(b)-8]), binary.LittleEndian.Uint64(b[len(b)-8:]); got != want {
		t.Errorf("the fixture's CRC-64 is %016x, its trailer says %016x", got, want)
	}
}

// TestReadHeader reads the aux fields in their encodings.
func TestReadHeader(t *testing.T) {
	magic := []byte("REDIS0010")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		name    string
		in      []byte
		want    rdbHeader
		corrupt bool
	}{
		{name: "fixture", in: fixture(t), want: rdbHeader{RedisVersion: "7.0.15", ReplicationID: "a4697e3a649a9a225adf2cf0c2074ad68daf0c34", Offset: 21232, Keys: 22}},
		{name: "int8", in: cat(magic, aux("repl-offset", []byte{0xc0, 0xfe}), []byte{0}), want: rdbHeader{Offset: -2}},
		{name: "int16", in: cat(magic, aux("repl-offset", []byte{0xc1, 0xf0, 0x52}), []byte{0}), want: rdbHeader{Offset: 21232}},
		{name: "int32", in: cat(magic, aux("repl-offset", []byte{0xc2, 0x40, 0x42, 0x0f, 0x00}), []byte{0}), want: rdbHeader{Offset: 1000000}},
		{name: "14-bit length", in: cat(magic, aux("repl-id", append([]byte{0x40, 70}, strings.Repeat("x", 70)...)), []byte{0}), want: rdbHeader{ReplicationID: strings.Repeat("x", 70)}},
		{name: "32-bit length", in: cat(magic, aux("redis-ver", []byte{0x80, 0, 0, 0, 3, '7', '.', '0'}), []byte{0}), want: rdbHeader{RedisVersion: "7.0"}},
		{name: "other aux fields and no database", in: cat(magic, aux("ctime", []byte{0xc2, 1, 2, 3, 4}), aux("redis-ver", rdbString("7.0.15")), []byte{opEOF}), want: rdbHeader{RedisVersion: "7.0.15"}},
		{name: "compressed aux stops the reading", in: cat(magic, aux("redis-ver", rdbString("7.0.15")), aux("lua", []byte{0xc3, 5, 5}), []byte{1, 2, 3}), want: rdbHeader{RedisVersion: "7.0.15"}},
		{name: "bad magic", in: cat([]byte("RADIS0010"), []byte{opEOF}), corrupt: true},
		{name: "bad version", in: cat([]byte("REDIS00x0"), []byte{opEOF}), corrupt: true},
		{name: "truncated magic", in: []byte("REDIS"), corrupt: true},
		{name: "truncated aux", in: cat(magic, aux("redis-ver", rdbString("7.0.15"))[:8]), corrupt: true},
		{name: "unknown length encoding", in: cat(magic, []byte{opAux, 0x82}), corrupt: true},
		{name: "unknown string encoding", in: cat(magic, aux("repl-offset", []byte{0xc7})), corrupt: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readHeader(&headerReader{r: bufio.NewReader(bytes.NewReader(c.in))})
			if c.corrupt {
				if !errors.Is(err, snapshotstore.ErrCorrupt) {
					t.Fatalf("readHeader: %+v, %v; want a corrupt RDB", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("readHeader = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestCheckingReader passes whole RDBs and ends damaged ones with
// ErrCorrupt.
func TestCheckingReader(t *testing.T) {
	good := fixture(t)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x01
	noSum := bytes.Clone(good)
	copy(noSum[len(noSum)-8:], make([]byte, 8))
	noEOF := bytes.Clone(good)
	noEOF[len(noEOF)-9] = 0
	badMagic := bytes.Clone(good)
	badMagic[0] = 'X'
	for _, c := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"whole", good, true},
		{"built", testRDB(7, 3), true},
		{"checksum disabled", noSum, true},
		{"flipped byte", flipped, false},
		{"truncated", good[:len(good)-1], false},
		{"truncated to the header", good[:20], false},
		{"no EOF opcode", noEOF, false},
		{"bad magic", badMagic, false},
		{"empty", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			// One byte at a time too: the trailer straddles reads.
			for _, r := range []io.Reader{bytes.NewReader(c.in), &oneByteReader{c.in}} {
				out.Reset()
				_, err := io.Copy(&out, newCheckingReader(r))
				if c.ok && (err != nil || !bytes.Equal(out.Bytes(), c.in)) {
					t.Fatalf("a whole RDB: %v", err)
				}
				if !c.ok && !errors.Is(err, snapshotstore.ErrCorrupt) {
					t.Fatalf("a damaged RDB: %v, want ErrCorrupt", err)
				}
			}
		})
	}
}

type oneByteReader struct{ b []byte }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], o.b = o.b[0], o.b[1:]
	return 1, nil
}

// TestBackupName round-trips a backup's name and refuses other names.
func TestBackupName(t *testing.T) {
	at := time.Date(2026, 11, 26, 13, 4, 5, 0, time.FixedZone("x", 3600))
	name := BackupName("a/b", at, 42)
	if name != "a/b_20261126-120405_o42.rdb" {
		t.Fatalf("BackupName = %q", name)
	}
	got, offset, ok := ParseBackupName("a/b", name)
	if !ok || offset != 42 || !got.Equal(at) {
		t.Fatalf("ParseBackupName = %v %d %v", got, offset, ok)
	}
	for _, bad := range []string{"a/b_20261126-120405_o42", "a/bc_20261126-120405_o42.rdb", "a/b_20261126-120405_ox.rdb", "a/b_2026_o42.rdb", "a/b_20261126-120405_o042.rdb", "a/b_v42_20261126-120405"} {
		if _, _, ok := ParseBackupName("a/b", bad); ok {
			t.Errorf("ParseBackupName accepted %q", bad)
		}
	}
	if n := nodeName("example-1.example-nodes.ns.svc:6379"); n != "example-1" {
		t.Errorf("nodeName = %q, want example-1", n)
	}
	if n := nodeName("10.0.0.7:6379"); n != "10.0.0.7" {
		t.Errorf("nodeName of an IP address = %q", n)
	}
}
