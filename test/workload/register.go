// Package workload is a client workload for the Redis fault tests and its
// checker.
//
// The workload (Start) is one client that runs operations back to back
// on a few dozen keys: SET of a value no other op writes, DEL, and INCR,
// each followed by WAIT n, against the node it is told is the primary. It
// records every operation it may have sent, with what it knows of it: OK
// when the command and its WAIT succeeded with at least n replicas,
// Unknown when anything failed after the command may have been sent. An
// acknowledged INCR's answer is recorded too.
//
// The checker (Check) reads the history as a register per key: every
// acknowledged op took effect, any subset of the unknown ones may have,
// and a value read from a node afterwards must be one some such history
// gives. Unlike a set of unique keys, it tells a node that holds an old
// value (a replica promoted while behind, a deleted key come back) from
// one that holds the current one. CheckSnapshot checks a copy taken at
// one moment (a backup) against the prefixes of the history.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is what an op does to its key.
type Kind uint8

// The kinds of op.
const (
	// Set writes a decimal integer no other op of the workload writes.
	Set Kind = iota + 1
	// Del deletes the key.
	Del
	// Incr adds one to the key's integer (an absent key holds 0).
	Incr
)

func (k Kind) String() string {
	switch k {
	case Set:
		return "SET"
	case Del:
		return "DEL"
	case Incr:
		return "INCR"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Outcome is what the client knows of an op.
type Outcome uint8

// The outcomes.
const (
	// OK: the command succeeded and WAIT said at least the replicas asked
	// for hold it.
	OK Outcome = iota + 1
	// Unknown: the command or its WAIT failed, refused or timed out after
	// the command may have been sent; it may or may not have taken effect.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Op is one operation of a history.
type Op struct {
	Kind Kind
	Key  string
	// Value is the value a Set wrote, or the value an acknowledged Incr
	// returned (0 for an unknown Incr, and for a Del).
	Value   int64
	Outcome Outcome
	// At is when the client learnt the outcome.
	At time.Time
}

func (o Op) String() string {
	var text string
	switch o.Kind {
	case Set:
		text = fmt.Sprintf("SET %s %d", o.Key, o.Value)
	case Incr:
		text = "INCR " + o.Key
		if o.Outcome == OK {
			text += fmt.Sprintf(" -> %d", o.Value)
		}
	default:
		text = fmt.Sprintf("%s %s", o.Kind, o.Key)
	}
	if o.Outcome != OK {
		text += " (" + o.Outcome.String() + ")"
	}
	return text
}

// History is what a workload did: its keys (every key it may have
// touched, each absent when it started) and its ops in the order the
// client sent them.
type History struct {
	Keys []string
	Ops  []Op
}

// Acked is how many ops were acknowledged.
func (h History) Acked() int {
	n := 0
	for _, op := range h.Ops {
		if op.Outcome == OK {
			n++
		}
	}
	return n
}

// Value is what a key holds, as read from a node.
type Value struct {
	// Present is false for a key that does not exist.
	Present bool
	// Text is the value held.
	Text string
}

// Absent is the value of a key that does not exist.
var Absent = Value{}

// Int is the value of a key that holds n.
func Int(n int64) Value { return Value{Present: true, Text: strconv.FormatInt(n, 10)} }

func (v Value) String() string {
	if !v.Present {
		return "absent"
	}
	return strconv.Quote(v.Text)
}

// Read returns the value each of keys holds on the node c is a client of
// (one MGET).
func Read(ctx context.Context, c redis.Cmdable, keys []string) (map[string]Value, error) {
	if len(keys) == 0 {
		return map[string]Value{}, nil
	}
	vals, err := c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	if len(vals) != len(keys) {
		return nil, fmt.Errorf("MGET of %d keys answered %d values", len(keys), len(vals))
	}
	out := make(map[string]Value, len(keys))
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			out[keys[i]] = Absent
		case string:
			out[keys[i]] = Value{Present: true, Text: v}
		default:
			return nil, fmt.Errorf("MGET answered %T for %s", v, keys[i])
		}
	}
	return out, nil
}

// DefaultKeys is how many keys a workload works on when its Config says 0.
const DefaultKeys = 40

// The workload's timing: an op and its WAIT are bounded together, WAIT
// waits at most waitTimeout for the replicas, and the client pauses
// retryPause after an error before it connects again.
const (
	opTimeout   = 2 * time.Second
	waitTimeout = time.Second
	retryPause  = 50 * time.Millisecond
)

// setStride spaces the values SETs write: the n-th op's SET writes
// n*setStride, which the INCRs on that key will not reach.
const setStride = 1_000_000

// Config is a workload's.
type Config struct {
	// Prefix names the keys: Prefix-0, Prefix-1, ...
	Prefix string
	// Keys is how many keys the client works on (DefaultKeys when 0).
	Keys int
	// Replicas is WAIT's n: an op is acknowledged only when WAIT says at
	// least this many replicas hold it.
	Replicas int
	// Pause is how long the client waits after each op.
	Pause time.Duration
	// Primary returns a client of the node to write to (the primary, as
	// the cluster says), nil when there is none yet. The workload closes
	// it after an error and asks again.
	Primary func() *redis.Client
}

// Register is a running workload: one client running SET, DEL and INCR,
// each followed by WAIT, back to back on its keys.
type Register struct {
	cfg  Config
	keys []string
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu         sync.Mutex
	ops        []Op
	acked      int
	errors     int
	lastErr    string
	longestGap time.Duration
}

// Start starts a workload on cfg.Prefix's keys, which must not exist yet.
func Start(cfg Config) *Register {
	if cfg.Keys <= 0 {
		cfg.Keys = DefaultKeys
	}
	w := &Register{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	for i := range cfg.Keys {
		w.keys = append(w.keys, fmt.Sprintf("%s-%d", cfg.Prefix, i))
	}
	go w.run()
	return w
}

// run is the client: an op at a time, each recorded with its outcome
// unless it certainly was not sent.
func (w *Register) run() {
	defer close(w.done)
	var c *redis.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	last := time.Now()
	for seq := int64(1); ; {
		select {
		case <-w.stop:
			return
		default:
		}
		if c == nil {
			if c = w.cfg.Primary(); c == nil {
				time.Sleep(retryPause)
				continue
			}
			// A new client sends its first op on a connection that has
			// answered: an op that fails to connect is not recorded.
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			err := c.Ping(ctx).Err()
			cancel()
			if err != nil {
				w.failed(err)
				c.Close()
				c = nil
				time.Sleep(retryPause)
				continue
			}
		}
		op := w.next(rng, seq)
		seq++
		err := w.do(c, &op)
		op.At = time.Now()
		if err != nil {
			op.Outcome, op.Value = Unknown, unknownValue(op)
			w.mu.Lock()
			if !notSent(err) {
				w.ops = append(w.ops, op)
			}
			w.mu.Unlock()
			w.failed(err)
			c.Close()
			c = nil
			time.Sleep(retryPause)
		} else {
			op.Outcome = OK
			w.mu.Lock()
			w.ops = append(w.ops, op)
			w.acked++
			w.longestGap = max(w.longestGap, op.At.Sub(last))
			w.mu.Unlock()
			last = op.At
		}
		if w.cfg.Pause > 0 {
			time.Sleep(w.cfg.Pause)
		}
	}
}

// next draws the next op: INCR six times in ten, SET three, DEL one, on a
// key drawn at random. The n-th op's SET writes n*setStride.
func (w *Register) next(rng *rand.Rand, n int64) Op {
	op := Op{Key: w.keys[rng.IntN(len(w.keys))]}
	switch r := rng.IntN(10); {
	case r < 6:
		op.Kind = Incr
	case r < 9:
		op.Kind, op.Value = Set, n*setStride
	default:
		op.Kind = Del
	}
	return op
}

// unknownValue is the Value an op keeps when its outcome is unknown: a
// SET's value; nothing for the others.
func unknownValue(op Op) int64 {
	if op.Kind == Set {
		return op.Value
	}
	return 0
}

// do sends op and its WAIT; for an INCR it sets op.Value to the answer.
func (w *Register) do(c *redis.Client, op *Op) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var err error
	switch op.Kind {
	case Set:
		err = c.Set(ctx, op.Key, op.Value, 0).Err()
	case Del:
		err = c.Del(ctx, op.Key).Err()
	case Incr:
		op.Value, err = c.Incr(ctx, op.Key).Result()
	}
	if err != nil {
		return err
	}
	got, err := c.Do(ctx, "WAIT", w.cfg.Replicas, waitTimeout.Milliseconds()).Int64()
	if err == nil && got < int64(w.cfg.Replicas) {
		err = fmt.Errorf("WAIT: %d of %d replicas acknowledged", got, w.cfg.Replicas)
	}
	return err
}

// notSent reports whether err says the command was never sent: the
// connection for it could not be opened.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (w *Register) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errors++
	w.lastErr = err.Error()
}

// Stop ends the workload (the op in flight first) and returns its
// history. It may be called more than once.
func (w *Register) Stop() History {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.History()
}

// History returns the history so far: the keys and a copy of the ops.
func (w *Register) History() History {
	w.mu.Lock()
	defer w.mu.Unlock()
	return History{Keys: append([]string(nil), w.keys...), Ops: append([]Op(nil), w.ops...)}
}

// Keys returns the workload's keys.
func (w *Register) Keys() []string { return append([]string(nil), w.keys...) }

// Acked is how many ops have been acknowledged.
func (w *Register) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// Errors is how many attempts failed: ops with an unknown outcome, ops
// not sent, and connections that did not answer.
func (w *Register) Errors() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errors
}

// LastError is the last attempt's error ("" before one).
func (w *Register) LastError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// LongestGap is the longest time between two acknowledged ops (the first
// from the start).
func (w *Register) LongestGap() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longestGap
}
