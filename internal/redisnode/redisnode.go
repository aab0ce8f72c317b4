// Package redisnode is what the operator asks of one Redis node: its
// replication state, and the few commands that change its role. The
// controller uses it through the Nodes interface, so its glue is tested
// with a fake.
package redisnode

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Timeouts of the calls: a node that does not answer within them counts as
// not answering in this pass.
const (
	DialTimeout = time.Second
	CallTimeout = time.Second
)

// Info is what a node says of its replication and its data.
type Info struct {
	// Primary is whether the node says it is a primary (role:master).
	Primary bool
	// ReplID is the replication ID of the node's history.
	ReplID string
	// Offset is the node's replication offset (master_repl_offset).
	Offset int64
	// ReplID2 and SecondOffset are the history the node continued when it
	// was promoted and the offset up to which it holds it
	// (master_replid2, second_repl_offset; -1 when none).
	ReplID2      string
	SecondOffset int64
	// PrimaryHost is, for a replica, the host of the primary it follows.
	PrimaryHost string
	// LinkUp is, for a replica, whether its link to its primary is up and
	// no sync is in progress.
	LinkUp bool
	// LastIO is, for a replica whose link is up, how long ago its primary
	// last sent it anything (master_last_io_seconds_ago); -1 when its link
	// is down.
	LastIO time.Duration
	// Keys is the number of keys in every database.
	Keys int64
	// ReplicaLag is, for a primary, how long ago each of its online
	// replicas, by address, last acknowledged the stream (REPLCONF ACK,
	// sent every second): what WAIT and min-replicas-to-write go by.
	ReplicaLag map[string]time.Duration
	// ReplicaPorts is, for a primary, the port each replica it lists
	// announced, by address (slaveN:ip=...,port=...): FAILOVER TO names
	// a replica by both. A replica that serves TLS alone (port 0) and
	// reaches its primary without TLS announces port 0.
	ReplicaPorts map[string]int
	// FailoverState is where a coordinated failover of the node
	// (FAILOVER) stands (master_failover_state): FailoverNone,
	// FailoverWaiting or FailoverInProgress; "" when the node does not
	// say (before Redis 6.2).
	FailoverState string
	// Usage is what the node says of its load and its persistence.
	Usage Usage
}

// Usage is what a node's INFO says of its memory, clients, commands and
// persistence: the figures of its metrics.
type Usage struct {
	// UsedMemory is the memory Redis allocated (used_memory), in bytes;
	// MaxMemory its limit (maxmemory), 0 when it has none.
	UsedMemory, MaxMemory int64
	// Clients is the number of connected clients (connected_clients).
	Clients int64
	// Commands is the number of commands processed since Redis started
	// (total_commands_processed).
	Commands int64
	// OpsPerSec is the commands the node processed per second of late
	// (instantaneous_ops_per_sec, Redis's own sample of the last seconds).
	OpsPerSec int64
	// LastSave is when the last RDB save succeeded (rdb_last_save_time);
	// SaveFailed whether the last background save failed
	// (rdb_last_bgsave_status:err).
	LastSave   time.Time
	SaveFailed bool
	// AOF is whether the append-only file is on (aof_enabled);
	// AOFWriteFailed whether its last write failed
	// (aof_last_write_status:err).
	AOF, AOFWriteFailed bool
}

// The states of a coordinated failover (master_failover_state).
const (
	// FailoverNone: no failover is under way.
	FailoverNone = "no-failover"
	// FailoverWaiting: writes are paused while the primary waits for the
	// replica to reach its offset.
	FailoverWaiting = "waiting-for-sync"
	// FailoverInProgress: the primary made itself a replica of the
	// replica, writes still paused, and asks it to take over (PSYNC
	// FAILOVER).
	FailoverInProgress = "failover-in-progress"
)

// Nodes sends commands to Redis nodes by address (host:port).
type Nodes interface {
	// Info returns the node's replication state and key count.
	Info(ctx context.Context, addr string) (Info, error)
	// Promote makes the node a primary (REPLICAOF NO ONE).
	Promote(ctx context.Context, addr string) error
	// Follow makes the node a replica of host:port (REPLICAOF).
	Follow(ctx context.Context, addr, host string, port int) error
	// Failover hands the primary at addr over to its replica listed as
	// toHost:toPort (see Client.Failover): nil once the node is a
	// replica, ErrFailoverAborted when it stayed the primary.
	Failover(ctx context.Context, addr, toHost string, toPort int, timeout time.Duration) error
	// PauseWrites pauses writes on the node for d (CLIENT PAUSE WRITE).
	PauseWrites(ctx context.Context, addr string, d time.Duration) error
	// Unpause ends a pause (CLIENT UNPAUSE).
	Unpause(ctx context.Context, addr string) error
	// KillScript stops the script the node runs (SCRIPT KILL): nil once
	// none runs, ErrUnkillable for a script that wrote.
	KillScript(ctx context.Context, addr string) error
}

// ErrUnkillable is KillScript's error for a script that wrote: only
// SHUTDOWN NOSAVE would stop it.
var ErrUnkillable = errors.New("the script wrote and cannot be killed")

// ErrFailoverAborted is Failover's error when the node stayed the
// primary: its replica did not catch up within the timeout, and the node
// took writes again.
var ErrFailoverAborted = errors.New("the failover was aborted: the replica did not catch up in time, and the primary takes writes again")

// Failover's pace: how often it asks the node how its failover stands,
// and how long past the failover's timeout it keeps asking (Redis checks
// the timeout ten times a second, and the node's answers may be slow).
const (
	failoverPoll   = 50 * time.Millisecond
	FailoverMargin = 2 * time.Second
)

// IsBusy reports whether err is Redis's BUSY answer: the node runs a script
// past its busy threshold, and answers nothing else until it ends or is
// killed.
func IsBusy(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "BUSY ")
}

// Client is Nodes over redigo (RESP2), one short connection per call,
// authenticated with a password.
type Client struct {
	Password string
	// TLS, when set, is the client configuration of nodes that serve TLS.
	TLS *tls.Config
	// Plain are the addresses reached without TLS though TLS is set: the
	// nodes of a cluster on its way to TLS whose pods do not serve it yet.
	Plain map[string]bool
	// Sessions, when set, resumes the TLS sessions of earlier calls to
	// the same node.
	Sessions *Sessions
}

var _ Nodes = Client{}

// do sends one command on a connection of its own, bounded by the dial and
// call timeouts. There is no retry: a node that does not answer waits for
// the next pass.
func (c Client) do(ctx context.Context, addr, cmd string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout+CallTimeout)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr,
		redis.DialPassword(c.Password),
		redis.DialConnectTimeout(DialTimeout),
		redis.DialReadTimeout(CallTimeout),
		redis.DialWriteTimeout(CallTimeout),
		redis.DialUseTLS(c.TLS != nil && !c.Plain[addr]),
		// The handshake is bounded by the call timeout: redigo's own
		// bound (10 s) does not follow ctx, and a node that is stopped
		// accepts the connection and answers nothing.
		redis.DialTLSHandshakeTimeout(CallTimeout),
		redis.DialTLSConfig(c.Sessions.Config(c.TLS, addr)))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return redis.DoContext(conn, ctx, cmd, args...)
}

// Info implements Nodes.
func (c Client) Info(ctx context.Context, addr string) (Info, error) {
	text, err := redis.String(c.do(ctx, addr, "INFO", "replication", "keyspace", "memory", "clients", "stats", "persistence"))
	if err != nil {
		return Info{}, err
	}
	return ParseInfo(text), nil
}

// Promote implements Nodes.
func (c Client) Promote(ctx context.Context, addr string) error {
	_, err := c.do(ctx, addr, "REPLICAOF", "NO", "ONE")
	return err
}

// Follow implements Nodes.
func (c Client) Follow(ctx context.Context, addr, host string, port int) error {
	_, err := c.do(ctx, addr, "REPLICAOF", host, strconv.Itoa(port))
	return err
}

// Failover implements Nodes: FAILOVER TO toHost toPort TIMEOUT timeout
// (Redis 6.2 and later), then INFO replication every 50 ms, for at most
// timeout and FailoverMargin, until the node says how it ended. The node
// pauses writes, waits for the replica to reach its offset and, once it
// has, makes itself its replica (role:slave, returned as nil: the replica
// holds every write the node took, and the node takes none); it then asks
// the replica to take over (PSYNC FAILOVER), which the replica does at
// once where the node reaches it, and the node's writes stay paused
// until it has (master_failover_state:failover-in-progress). When the
// replica has not caught up within timeout, the node stays the primary
// and takes writes again (role:master, no-failover):
// ErrFailoverAborted. No promotion can follow the end of the pause: the
// node demotes itself while its writes are paused, or not at all.
func (c Client) Failover(ctx context.Context, addr, toHost string, toPort int, timeout time.Duration) error {
	end := time.Now().Add(timeout + FailoverMargin)
	if _, err := c.do(ctx, addr, "FAILOVER", "TO", toHost, strconv.Itoa(toPort), "TIMEOUT", strconv.FormatInt(timeout.Milliseconds(), 10)); err != nil {
		return err
	}
	return failoverOutcome(ctx, func(ctx context.Context) (Info, error) { return c.Info(ctx, addr) }, end, failoverPoll)
}

// failoverOutcome asks info every poll how the failover of a node
// stands, until it ends or end passes (see Client.Failover).
func failoverOutcome(ctx context.Context, info func(context.Context) (Info, error), end time.Time, poll time.Duration) error {
	for {
		in, err := info(ctx)
		switch {
		case err != nil:
		case !in.Primary:
			return nil
		case in.FailoverState == FailoverNone:
			return ErrFailoverAborted
		default:
			err = fmt.Errorf("the failover is still %s", cmp.Or(in.FailoverState, "under way"))
		}
		if !time.Now().Add(poll).Before(end) {
			return fmt.Errorf("the failover did not end in time: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the failover did not end: %w", ctx.Err())
		case <-time.After(poll):
		}
	}
}

// PauseWrites implements Nodes.
func (c Client) PauseWrites(ctx context.Context, addr string, d time.Duration) error {
	_, err := c.do(ctx, addr, "CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), "WRITE")
	return err
}

// Unpause implements Nodes.
func (c Client) Unpause(ctx context.Context, addr string) error {
	_, err := c.do(ctx, addr, "CLIENT", "UNPAUSE")
	return err
}

// KillScript implements Nodes.
func (c Client) KillScript(ctx context.Context, addr string) error {
	_, err := c.do(ctx, addr, "SCRIPT", "KILL")
	var re redis.Error
	switch {
	case errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOTBUSY"):
		// The script ended meanwhile.
		return nil
	case errors.As(err, &re) && strings.HasPrefix(re.Error(), "UNKILLABLE"):
		return fmt.Errorf("%w: %s", ErrUnkillable, re.Error())
	}
	return err
}

// ParseInfo reads the replication, keyspace, memory, clients, stats and
// persistence sections of INFO.
func ParseInfo(text string) Info {
	fields := map[string]string{}
	var keys int64
	var lags map[string]time.Duration
	var ports map[string]int
	for line := range strings.SplitSeq(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		fields[k] = v
		// slave0:ip=10.0.0.2,port=6379,state=online,offset=1234,lag=0
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "ip=") {
			replica := map[string]string{}
			for part := range strings.SplitSeq(v, ",") {
				if pk, pv, ok := strings.Cut(part, "="); ok {
					replica[pk] = pv
				}
			}
			if port, err := strconv.Atoi(replica["port"]); err == nil {
				if ports == nil {
					ports = map[string]int{}
				}
				ports[replica["ip"]] = port
			}
			if lag, err := strconv.Atoi(replica["lag"]); err == nil && replica["state"] == "online" {
				if lags == nil {
					lags = map[string]time.Duration{}
				}
				lags[replica["ip"]] = time.Duration(lag) * time.Second
			}
		}
		// db0:keys=1,expires=0,avg_ttl=0
		if strings.HasPrefix(k, "db") {
			for part := range strings.SplitSeq(v, ",") {
				if n, ok := strings.CutPrefix(part, "keys="); ok {
					c, _ := strconv.ParseInt(n, 10, 64)
					keys += c
				}
			}
		}
	}
	in := Info{Primary: fields["role"] == "master", ReplID: fields["master_replid"], Keys: keys, FailoverState: fields["master_failover_state"]}
	if in.Primary {
		in.ReplicaLag, in.ReplicaPorts = lags, ports
	}
	in.Offset, _ = strconv.ParseInt(fields["master_repl_offset"], 10, 64)
	in.Usage = parseUsage(fields)
	in.SecondOffset = -1
	if id := fields["master_replid2"]; strings.Trim(id, "0") != "" {
		in.ReplID2 = id
		in.SecondOffset, _ = strconv.ParseInt(fields["second_repl_offset"], 10, 64)
	}
	if !in.Primary {
		in.PrimaryHost = fields["master_host"]
		in.LinkUp = fields["master_link_status"] == "up" && fields["master_sync_in_progress"] == "0"
		if s, err := strconv.Atoi(fields["master_last_io_seconds_ago"]); err == nil && s >= 0 {
			in.LastIO = time.Duration(s) * time.Second
		} else {
			in.LastIO = -1
		}
	}
	return in
}

// parseUsage reads Usage from the fields of INFO; a field a node does not
// report stays zero.
func parseUsage(fields map[string]string) Usage {
	number := func(k string) int64 {
		n, _ := strconv.ParseInt(fields[k], 10, 64)
		return n
	}
	u := Usage{UsedMemory: number("used_memory"), MaxMemory: number("maxmemory"), Clients: number("connected_clients"),
		Commands: number("total_commands_processed"), OpsPerSec: number("instantaneous_ops_per_sec"), SaveFailed: fields["rdb_last_bgsave_status"] == "err",
		AOF: fields["aof_enabled"] == "1", AOFWriteFailed: fields["aof_last_write_status"] == "err"}
	if t := number("rdb_last_save_time"); t > 0 {
		u.LastSave = time.Unix(t, 0)
	}
	return u
}

// Addr is the address of a node's Redis port.
func Addr(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// Served returns the certificate the TLS node at addr presents.
func (c Client) Served(ctx context.Context, addr string) (*x509.Certificate, error) {
	if c.TLS == nil {
		return nil, errors.New("not a TLS client")
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: DialTimeout}, Config: c.Sessions.Config(c.TLS, addr)}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout+CallTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

// ReloadTLS has the node read its certificate, key and CA files again:
// CONFIG SET of their paths, even unchanged, reloads them (Redis 7.0.1
// and later).
func (c Client) ReloadTLS(ctx context.Context, addr, certFile, keyFile, caFile string) error {
	_, err := c.do(ctx, addr, "CONFIG", "SET", "tls-cert-file", certFile, "tls-key-file", keyFile, "tls-ca-cert-file", caFile)
	return err
}

// CAFile returns the file the node loaded its CA certificates from
// (tls-ca-cert-file).
func (c Client) CAFile(ctx context.Context, addr string) (string, error) {
	kv, err := redis.Strings(c.do(ctx, addr, "CONFIG", "GET", "tls-ca-cert-file"))
	if err != nil {
		return "", err
	}
	if len(kv) != 2 {
		return "", fmt.Errorf("CONFIG GET tls-ca-cert-file answered %q", kv)
	}
	return kv[1], nil
}

// ReplicationTLS reports whether the node reaches its primary with TLS
// (tls-replication).
func (c Client) ReplicationTLS(ctx context.Context, addr string) (bool, error) {
	kv, err := redis.Strings(c.do(ctx, addr, "CONFIG", "GET", "tls-replication"))
	if err != nil {
		return false, err
	}
	if len(kv) != 2 {
		return false, fmt.Errorf("CONFIG GET tls-replication answered %q", kv)
	}
	return kv[1] == "yes", nil
}

// SetReplicationTLS sets whether the node reaches its primary with TLS
// (tls-replication); it takes effect at the node's next link to a
// primary.
func (c Client) SetReplicationTLS(ctx context.Context, addr string, on bool) error {
	value := "no"
	if on {
		value = "yes"
	}
	_, err := c.do(ctx, addr, "CONFIG", "SET", "tls-replication", value)
	return err
}

// ConfigGet returns the value of the parameter key (CONFIG GET), as the
// node reports it.
func (c Client) ConfigGet(ctx context.Context, addr, key string) (string, error) {
	kv, err := redis.Strings(c.do(ctx, addr, "CONFIG", "GET", key))
	if err != nil {
		return "", err
	}
	if len(kv) != 2 || kv[0] != key {
		return "", fmt.Errorf("CONFIG GET %s answered %q", key, kv)
	}
	return kv[1], nil
}

// ConfigSet sets the parameter key to value (CONFIG SET). A value Redis
// refuses is a redis.Error (see IsRefused).
func (c Client) ConfigSet(ctx context.Context, addr, key, value string) error {
	_, err := c.do(ctx, addr, "CONFIG", "SET", key, value)
	return err
}

// IsRefused reports whether err is Redis's answer to a command it
// refused (an error reply), rather than a failure to reach it.
func IsRefused(err error) bool {
	var e redis.Error
	return errors.As(err, &e) && !IsBusy(err)
}
