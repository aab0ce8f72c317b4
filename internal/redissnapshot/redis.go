package redissnapshot

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// dialTimeout bounds the connection to a node; infoTimeout its answers
// to AUTH and INFO.
const (
	dialTimeout = 5 * time.Second
	infoTimeout = 5 * time.Second
)

// Credentials are what a node is authenticated with; an empty Password
// sends no AUTH.
type Credentials struct {
	Username string
	Password string
	// TLS, when set, is the client configuration of nodes that serve TLS.
	TLS *tls.Config
}

// conn is a connection to one node speaking RESP.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	stop func() bool
}

// dial connects to addr and authenticates. The connection closes when ctx
// ends.
func dial(ctx context.Context, addr string, creds Credentials) (*conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if creds.TLS != nil {
		tc := tls.Client(c, creds.TLS)
		hctx, cancel := context.WithTimeout(ctx, dialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c = tc
	}
	cn := &conn{addr: addr, c: c, r: bufio.NewReaderSize(c, 64<<10)}
	cn.stop = context.AfterFunc(ctx, func() { c.Close() })
	if creds.Password != "" {
		args := []string{"AUTH", creds.Password}
		if creds.Username != "" {
			args = []string{"AUTH", creds.Username, creds.Password}
		}
		if _, err := cn.call(infoTimeout, args...); err != nil {
			cn.close()
			return nil, err
		}
	}
	return cn, nil
}

func (cn *conn) close() {
	cn.stop()
	cn.c.Close()
}

// serverError is an error reply of the node.
type serverError string

func (e serverError) Error() string { return string(e) }

// deniedError tells whether err is a node's refusal of the credentials.
func deniedError(err error) bool {
	var se serverError
	if !errors.As(err, &se) {
		return false
	}
	code, _, _ := strings.Cut(string(se), " ")
	return code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM"
}

// send writes a command as a RESP array of bulk strings.
func (cn *conn) send(args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := io.WriteString(cn.c, b.String())
	return err
}

// call sends a command and reads its reply, a simple string or a bulk
// string, within timeout.
func (cn *conn) call(timeout time.Duration, args ...string) (string, error) {
	if err := cn.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	defer func() { _ = cn.c.SetDeadline(time.Time{}) }()
	if err := cn.send(args...); err != nil {
		return "", err
	}
	line, err := cn.readLine()
	if err != nil {
		return "", err
	}
	switch {
	case line == "":
		return "", errors.New("an empty reply")
	case line[0] == '+':
		return line[1:], nil
	case line[0] == '-':
		return "", serverError(line[1:])
	case line[0] == '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("a malformed reply %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(cn.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("an unexpected reply %q", line)
}

// readLine reads one line of the reply without its line end.
func (cn *conn) readLine() (string, error) {
	line, err := cn.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// info asks INFO section and returns its fields.
func (cn *conn) info(section string) (map[string]string, error) {
	text, err := cn.call(infoTimeout, "INFO", section)
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// sync asks for the dataset as a replica does (SYNC, without announcing
// the EOF capability, so that the length comes first) and returns the
// length of the RDB that follows on cn.r. The newlines the node sends
// while it writes the RDB are skipped.
func (cn *conn) sync() (int64, error) {
	// Only the RDB, not the stream of writes after it; a node that does
	// not know the option still sends the RDB first.
	_, _ = cn.call(infoTimeout, "REPLCONF", "rdb-only", "1")
	if err := cn.send("SYNC"); err != nil {
		return 0, err
	}
	for {
		line, err := cn.readLine()
		if err != nil {
			return 0, err
		}
		switch {
		case line == "":
			continue
		case line[0] == '-':
			return 0, serverError(line[1:])
		case line[0] == '$':
			n, err := strconv.ParseInt(line[1:], 10, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("the node announced the dataset as %q", line)
			}
			return n, nil
		}
		return 0, fmt.Errorf("an unexpected reply to SYNC %q", line)
	}
}

// exactReader reads n bytes from r; an earlier end is a truncated RDB.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("%w: the node closed the connection %d bytes before the end of the RDB", snapshotstore.ErrCorrupt, e.left)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}
