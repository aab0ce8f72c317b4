package redissnapshot

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/app-operator/app-operator/internal/snapshotstore/snapshottest"

	"github.com/app-operator/app-operator/test/redisproto"
)

// fakeNode is a Redis node in the test: it speaks enough RESP for the
// tool (AUTH, INFO, REPLCONF, SYNC) and sends rdb on SYNC.
type fakeNode struct {
	password string
	// role is master or slave; linkUp and syncing are the replica's
	// link state.
	role    string
	linkUp  bool
	syncing bool
	// lastIO is a replica's master_last_io_seconds_ago; replID the
	// node's master_replid, defaultReplID when empty.
	lastIO int
	replID string
	offset int
	rdb    []byte
	// announce, when above 0, is the length announced on SYNC in place of
	// that of rdb.
	announce int
	syncs    atomic.Int32
}

// start listens on a free loopback port and returns the address.
func (n *fakeNode) start(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go n.serve(c)
		}
	}()
	return l.Addr().String()
}

func (n *fakeNode) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	authed := n.password == ""
	for {
		args, err := redisproto.ReadCommand(r)
		if err != nil {
			return
		}
		cmd := strings.ToUpper(args[0])
		switch {
		case cmd == "AUTH" && n.password == "":
			fmt.Fprint(c, "-ERR AUTH <password> called without any password configured for the default user.\r\n")
		case cmd == "AUTH":
			if args[len(args)-1] != n.password {
				fmt.Fprint(c, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
				continue
			}
			authed = true
			fmt.Fprint(c, "+OK\r\n")
		case !authed:
			fmt.Fprint(c, "-NOAUTH Authentication required.\r\n")
		case cmd == "INFO":
			writeBulk(c, n.info(args[1]))
		case cmd == "REPLCONF":
			fmt.Fprint(c, "+OK\r\n")
		case cmd == "SYNC":
			n.syncs.Add(1)
			// Keep-alives while the fork writes the RDB.
			fmt.Fprint(c, "\n\n\n")
			size := len(n.rdb)
			if n.announce > 0 {
				size = n.announce
			}
			fmt.Fprintf(c, "$%d\r\n", size)
			_, _ = c.Write(n.rdb)
			return
		default:
			fmt.Fprint(c, "-ERR unknown command\r\n")
		}
	}
}

// info is the text of INFO section.
func (n *fakeNode) info(section string) string {
	if strings.EqualFold(section, "server") {
		return "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"
	}
	replID := cmp.Or(n.replID, defaultReplID)
	if n.role == "master" {
		return fmt.Sprintf("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:%s\r\nmaster_repl_offset:%d\r\n", replID, n.offset)
	}
	link, syncing := "down", 0
	if n.linkUp {
		link = "up"
	}
	if n.syncing {
		syncing = 1
	}
	return fmt.Sprintf("# Replication\r\nrole:slave\r\nmaster_host:x\r\nmaster_link_status:%s\r\nmaster_last_io_seconds_ago:%d\r\nmaster_sync_in_progress:%d\r\nslave_repl_offset:%d\r\nmaster_replid:%s\r\n", link, n.lastIO, syncing, n.offset, replID)
}

// defaultReplID is the replication ID of a fake node that sets none: every
// such node holds one history.
const defaultReplID = "5d6c0e8d5b3f3f5a1e9c1b0a7f6e5d4c3b2a1908"

func writeBulk(w io.Writer, s string) {
	fmt.Fprintf(w, "$%d\r\n%s\r\n", len(s), s)
}

// freeAddr is a loopback address nobody listens at.
func freeAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", snapshottest.FreePort(t))
}
