package workload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/app-operator/app-operator/test/redisproto"
)

// fakeRedis is a Redis of one node, enough for the workload: PING, SET,
// DEL, INCR, WAIT and MGET, each write command failing in one of several
// ways now and then.
type fakeRedis struct {
	ln     net.Listener
	mu     sync.Mutex
	data   map[string]string
	writes int
	// seen counts what went wrong, by fault.
	seen map[fault]int
}

type fault int

const (
	noFault fault = iota
	// closeBefore closes the connection without executing the command.
	closeBefore
	// closeAfter executes the command and closes the connection without
	// an answer.
	closeAfter
	// refuse answers an error without executing the command.
	refuse
	// waitShort answers the WAIT after the command 0 replicas.
	waitShort
)

// faultOf is what goes wrong with the n-th write command.
func faultOf(n int) fault {
	switch {
	case n%13 == 3:
		return closeAfter
	case n%17 == 5:
		return closeBefore
	case n%19 == 7:
		return refuse
	case n%23 == 11:
		return waitShort
	}
	return noFault
}

func startFake(t *testing.T) *fakeRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{ln: ln, data: map[string]string{}, seen: map[fault]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeRedis) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: f.ln.Addr().String(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
}

func (f *fakeRedis) serve(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	// pending is the fault of the last write command, for its WAIT.
	pending := noFault
	for {
		args, err := redisproto.ReadCommand(r)
		if err != nil {
			return
		}
		reply, closeConn := f.do(args, &pending)
		if closeConn {
			return
		}
		if _, err := w.WriteString(reply); err != nil || w.Flush() != nil {
			return
		}
	}
}

// do executes args and returns the answer, or true to close the
// connection without one.
func (f *fakeRedis) do(args []string, pending *fault) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cmd := strings.ToUpper(args[0])
	switch cmd {
	case "SET", "DEL", "INCR":
		f.writes++
		ft := faultOf(f.writes)
		f.seen[ft]++
		*pending = ft
		switch ft {
		case closeBefore:
			return "", true
		case refuse:
			return "-READONLY You can't write against a read only replica.\r\n", false
		}
		var reply string
		switch cmd {
		case "SET":
			f.data[args[1]] = args[2]
			reply = "+OK\r\n"
		case "DEL":
			_, ok := f.data[args[1]]
			delete(f.data, args[1])
			reply = ":0\r\n"
			if ok {
				reply = ":1\r\n"
			}
		case "INCR":
			n := int64(0)
			if v, ok := f.data[args[1]]; ok {
				var err error
				if n, err = strconv.ParseInt(v, 10, 64); err != nil {
					return "-ERR value is not an integer or out of range\r\n", false
				}
			}
			n++
			f.data[args[1]] = strconv.FormatInt(n, 10)
			reply = fmt.Sprintf(":%d\r\n", n)
		}
		return reply, ft == closeAfter
	case "WAIT":
		if *pending == waitShort {
			return ":0\r\n", false
		}
		return ":" + args[1] + "\r\n", false
	case "PING":
		return "+PONG\r\n", false
	case "MGET":
		reply := fmt.Sprintf("*%d\r\n", len(args)-1)
		for _, k := range args[1:] {
			if v, ok := f.data[k]; ok {
				reply += fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)
			} else {
				reply += "$-1\r\n"
			}
		}
		return reply, false
	case "HELLO":
		return "-ERR unknown command 'HELLO'\r\n", false
	}
	return "+OK\r\n", false
}

// The workload against a node that fails now and then in every way the
// client can see (the connection closed before or after the command, a
// command refused, WAIT short of replicas), and that cannot be reached
// for its first connections: every op the node answered is in the
// history with its outcome, the unknown ones among them, no op sent to no
// node is, and the values the node holds at the end are allowed. Then a
// stale value written back is a violation.
func TestRegisterAgainstAFailingNode(t *testing.T) {
	f := startFake(t)
	var asked atomic.Int32
	w := Start(Config{Prefix: "t", Keys: 5, Replicas: 1, Primary: func() *redis.Client {
		if asked.Add(1) <= 3 {
			// Nothing listens there.
			return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1})
		}
		return f.client()
	}})
	deadline := time.Now().Add(30 * time.Second)
	for w.Acked() < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ops acknowledged after 30 s (last error: %s)", w.Acked(), w.LastError())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h := w.Stop()
	if again := w.Stop(); len(again.Ops) != len(h.Ops) {
		t.Errorf("a second Stop: %d ops, want %d", len(again.Ops), len(h.Ops))
	}

	kinds := map[string]int{}
	unknown := 0
	for _, op := range h.Ops {
		kinds[fmt.Sprint(op.Kind, " ", op.Outcome)]++
		if op.Outcome == Unknown {
			unknown++
		}
		if op.Kind == Incr && op.Outcome == Unknown && op.Value != 0 {
			t.Errorf("%s: an unknown INCR with a value", op)
		}
	}
	f.mu.Lock()
	writes, seen := f.writes, fmt.Sprint(f.seen)
	f.mu.Unlock()
	t.Logf("%d ops (%v), %d acknowledged, %d unknown; %d errors, last %s; the node saw %d writes, faults %s",
		len(h.Ops), kinds, h.Acked(), unknown, w.Errors(), w.LastError(), writes, seen)
	// Every write command the node received is one op of the history, and
	// every failure of one is an unknown op.
	if len(h.Ops) != writes || h.Acked() != w.Acked() || h.Acked()+unknown != len(h.Ops) {
		t.Errorf("%d ops recorded, %d acknowledged (Acked %d), %d unknown; the node received %d writes", len(h.Ops), h.Acked(), w.Acked(), unknown, writes)
	}
	for _, k := range []string{"SET ok", "DEL ok", "INCR ok", "SET unknown", "DEL unknown", "INCR unknown"} {
		if kinds[k] == 0 {
			t.Errorf("no %s op in %v", k, kinds)
		}
	}
	if w.Errors() != unknown+3 {
		t.Errorf("%d errors, want the %d unknown ops and the 3 connections that failed", w.Errors(), unknown)
	}
	if kinds["INCR ok"] < kinds["SET ok"] {
		t.Errorf("ops %v: want INCR the most frequent", kinds)
	}

	c := f.client()
	defer c.Close()
	final, err := Read(context.Background(), c, h.Keys)
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(h, final)
	if rep.Lost() != 0 || len(rep.Unchecked()) != 0 || len(rep.Keys) != 5 {
		t.Fatalf("%d keys checked, %d violations: %v, %d unchecked", len(rep.Keys), rep.Lost(), rep.Violations(), len(rep.Unchecked()))
	}

	// A stale value: an acknowledged SET's, written back after a later
	// acknowledged op on its key.
	var stale Op
	for i, op := range h.Ops {
		if op.Kind != Set || op.Outcome != OK {
			continue
		}
		for _, later := range h.Ops[i+1:] {
			if later.Key == op.Key && later.Outcome == OK {
				stale = op
				break
			}
		}
		if stale.Key != "" {
			break
		}
	}
	if stale.Key == "" {
		t.Fatal("no acknowledged SET with an acknowledged op after it")
	}
	final[stale.Key] = Int(stale.Value)
	rep = Check(h, final)
	if v := rep.Violations(); len(v) != 1 || v[0].Key != stale.Key {
		t.Fatalf("violations %v, want %s alone", v, stale.Key)
	}
	t.Log(rep.Violations()[0].Why)
}

func TestNotSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{dial, true},
		{fmt.Errorf("get a connection: %w", dial), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, false},
		{io.EOF, false},
		{context.DeadlineExceeded, false},
		{errors.New("READONLY You can't write against a read only replica."), false},
	} {
		if got := notSent(tc.err); got != tc.want {
			t.Errorf("notSent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
