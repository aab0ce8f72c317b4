package fuzzspec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ReadCorpus reads every entry of a seed corpus directory
// (testdata/fuzz/FuzzXxx): the arguments of the fuzz target, by file name.
// It reads the types the targets take: []byte, string and byte.
func ReadCorpus(dir string) (map[string][]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return nil, err
	}
	out := map[string][]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		args, err := parseEntry(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[filepath.Base(f)] = args
	}
	return out, nil
}

// parseEntry reads a corpus entry in the "go test fuzz v1" format.
func parseEntry(data []byte) ([]any, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" {
		return nil, fmt.Errorf("not a corpus entry: want the header %q", "go test fuzz v1")
	}
	var args []any
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		typ, val, ok := strings.Cut(line, "(")
		if !ok || !strings.HasSuffix(val, ")") {
			return nil, fmt.Errorf("malformed value %q", line)
		}
		val = strings.TrimSuffix(val, ")")
		var a any
		var err error
		switch typ {
		case "[]byte":
			var s string
			s, err = strconv.Unquote(val)
			a = []byte(s)
		case "string":
			a, err = strconv.Unquote(val)
		case "byte", "uint8":
			var n uint64
			if strings.HasPrefix(val, "'") {
				// go test writes a byte as a quoted rune.
				var s string
				if s, err = strconv.Unquote(val); err == nil {
					r, _ := utf8.DecodeRuneInString(s)
					n = uint64(r)
				}
			} else {
				n, err = strconv.ParseUint(val, 0, 8)
			}
			a = uint8(n)
		default:
			return nil, fmt.Errorf("unsupported type %q", typ)
		}
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", line, err)
		}
		args = append(args, a)
	}
	return args, sc.Err()
}

// EncodeEntry writes the arguments of a fuzz target ([]byte, string or
// byte) as a corpus entry in the "go test fuzz v1" format, as go test
// writes them.
func EncodeEntry(args ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case uint8:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			panic(fmt.Sprintf("a corpus entry of a %T", a))
		}
	}
	return b.Bytes()
}
