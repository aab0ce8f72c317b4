package redissnapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// SaveOptions says what to back up and where.
type SaveOptions struct {
	// Addrs are the nodes' addresses, HOST:PORT.
	Addrs []string
	// Credentials authenticate the tool at every node.
	Credentials Credentials
	// To is the target: s3://<bucket>/<path> or a local path. The backup is
	// stored as <path>_<time>_o<offset>.rdb.
	To string
	// S3 says how to reach S3 when To is an s3:// URL.
	S3 snapshotstore.S3Options
	// MaxBackups, when above 0, is how many backups of the same prefix to
	// keep: the oldest beyond it are deleted after a successful save.
	MaxBackups int
	// Logger logs which node was chosen and why; nil logs nothing.
	Logger *zap.Logger
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
}

// syncedWithin is how recently a replica must have heard from its primary,
// which pings it every second, to count as in sync: its link stays up for
// repl-timeout (60 s) after the primary went silent. The operator counts a
// replica as streaming by the same bound.
const syncedWithin = 3

// nodeStatus is one node's answer to INFO replication and INFO server.
type nodeStatus struct {
	addr string
	role string
	// inSync: a replica whose link to the primary is up, not syncing,
	// and heard from it within syncedWithin seconds.
	inSync bool
	// replID is the replication ID of the history the node holds.
	replID  string
	offset  int64
	version string
}

// Save reads the dataset of the replica in sync with the highest offset,
// or of the primary when no replica is in sync, checks the RDB's CRC-64
// and stores it under To. The backup's name appears only once the whole
// RDB was stored and checked.
func Save(ctx context.Context, opts SaveOptions) (Result, error) {
	res, err := save(ctx, opts)
	return res, snapshotstore.TimedOut(ctx, err, "save")
}

func save(ctx context.Context, opts SaveOptions) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.Addrs) == 0 {
		return Result{}, snapshotstore.Failure(conditions.ReasonInvalidArgument, "no Redis addresses given")
	}
	st, prefix, err := snapshotstore.Reach(ctx, opts.To, opts.S3)
	if err != nil {
		return Result{}, err
	}
	source, err := pickNode(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	opts.Logger.Info("reading the dataset", zap.String("node", source.addr), zap.String("role", source.role), zap.Int64("offset", source.offset))

	cn, err := dial(ctx, source.addr, opts.Credentials)
	if err != nil {
		return Result{}, nodeFailure(source.addr, err)
	}
	defer cn.close()
	takenAt := opts.Now().UTC()
	length, err := cn.sync()
	if err != nil {
		return Result{}, nodeFailure(source.addr, err)
	}
	// The header is read first, for the offset in the backup's name, and
	// then stored with the rest: everything goes through the check.
	rest := bufio.NewReader(&exactReader{r: cn.r, left: length})
	h := &headerReader{r: rest}
	hdr, err := readHeader(h)
	if err != nil {
		return Result{}, nodeFailure(source.addr, err)
	}
	name := BackupName(prefix, takenAt, hdr.Offset)
	size, err := snapshotstore.Upload(ctx, st, name, newCheckingReader(io.MultiReader(&h.seen, rest)), source.addr)
	if err != nil {
		return Result{}, err
	}

	res := Result{
		Report:        backuprun.Report{Key: st.Display(name), Size: size, TakenAt: takenAt.Truncate(time.Second)},
		Node:          nodeName(source.addr),
		Role:          source.role,
		Offset:        hdr.Offset,
		ReplicationID: hdr.ReplicationID,
		RedisVersion:  source.version,
		Keys:          hdr.Keys,
	}
	if res.RedisVersion == "" {
		res.RedisVersion = hdr.RedisVersion
	}
	if opts.MaxBackups > 0 {
		if err := prune(ctx, st, prefix, name, opts.MaxBackups); err != nil {
			return res, err
		}
	}
	return res, nil
}

// nodeFailure gives an error of a node its reason: refused credentials
// are AccessDenied, a damaged RDB Corrupt, an error reply Failed, and
// anything else (a refused or broken connection) Unreachable.
func nodeFailure(addr string, err error) error {
	var se serverError
	switch {
	case deniedError(err):
		return &snapshotstore.Error{Reason: conditions.ReasonAccessDenied, Err: fmt.Errorf("the node %s refused the credentials: %w", addr, err)}
	case errors.Is(err, snapshotstore.ErrCorrupt):
		return &snapshotstore.Error{Reason: conditions.ReasonCorrupt, Err: fmt.Errorf("the RDB from %s was incomplete or damaged, nothing was stored: %w", addr, err)}
	case errors.As(err, &se):
		return &snapshotstore.Error{Reason: conditions.ReasonFailed, Err: fmt.Errorf("the node %s did not send its dataset: %w", addr, err)}
	}
	return snapshotstore.Failure(conditions.ReasonUnreachable, "the node %s did not send its dataset: %w", addr, err)
}

// pickNode asks every node for its replication state and returns the
// replica in sync with the highest offset, else the primary with the
// highest offset.
func pickNode(ctx context.Context, opts SaveOptions) (nodeStatus, error) {
	var (
		answered []nodeStatus
		failures []string
		denied   error
	)
	for _, addr := range opts.Addrs {
		st, err := statusOf(ctx, addr, opts.Credentials)
		if err != nil {
			if deniedError(err) && denied == nil {
				denied = err
			}
			failures = append(failures, fmt.Sprintf("%s: %v", addr, err))
			continue
		}
		opts.Logger.Debug("node", zap.String("node", addr), zap.String("role", st.role), zap.Bool("inSync", st.inSync), zap.Int64("offset", st.offset))
		answered = append(answered, st)
	}
	var replicas, primaries []nodeStatus
	for _, st := range answered {
		switch {
		case st.role == roleReplica && st.inSync:
			replicas = append(replicas, st)
		case st.role == rolePrimary:
			primaries = append(primaries, st)
		}
	}
	// Two primaries hold two histories, and which one clients wrote to
	// last cannot be told from here; with one, a replica counts only
	// while it holds that primary's history.
	if len(primaries) > 1 {
		names := make([]string, 0, len(primaries))
		for _, p := range primaries {
			names = append(names, p.addr)
		}
		return nodeStatus{}, &snapshotstore.Error{Reason: conditions.ReasonNoNodeInSync, Err: fmt.Errorf("%s all answer as primary: which holds the data clients wrote last cannot be told", strings.Join(names, ", "))}
	}
	if len(primaries) == 1 {
		replicas = slices.DeleteFunc(replicas, func(r nodeStatus) bool { return r.replID != primaries[0].replID })
	}
	for _, candidates := range [][]nodeStatus{replicas, primaries} {
		if len(candidates) > 0 {
			sort.SliceStable(candidates, func(i, j int) bool { return candidates[i].offset > candidates[j].offset })
			return candidates[0], nil
		}
	}
	if denied != nil {
		return nodeStatus{}, &snapshotstore.Error{Reason: conditions.ReasonAccessDenied, Err: fmt.Errorf("the Redis nodes refused the credentials (%s)", strings.Join(failures, "; "))}
	}
	if len(answered) > 0 {
		return nodeStatus{}, &snapshotstore.Error{Reason: conditions.ReasonNoNodeInSync, Err: fmt.Errorf("no node is the primary or a replica in sync with it (%d of %d answered)", len(answered), len(opts.Addrs))}
	}
	return nodeStatus{}, &snapshotstore.Error{Reason: conditions.ReasonUnreachable, Err: fmt.Errorf("no Redis node answered (%s)", strings.Join(failures, "; "))}
}

// statusOf asks one node INFO replication and INFO server.
func statusOf(ctx context.Context, addr string, creds Credentials) (nodeStatus, error) {
	cn, err := dial(ctx, addr, creds)
	if err != nil {
		return nodeStatus{}, err
	}
	defer cn.close()
	repl, err := cn.info("replication")
	if err != nil {
		return nodeStatus{}, err
	}
	server, err := cn.info("server")
	if err != nil {
		return nodeStatus{}, err
	}
	st := nodeStatus{addr: addr, version: server["redis_version"], replID: repl["master_replid"]}
	switch repl["role"] {
	case "master":
		st.role = rolePrimary
		st.offset, _ = strconv.ParseInt(repl["master_repl_offset"], 10, 64)
	case "slave":
		st.role = roleReplica
		lastIO, err := strconv.Atoi(repl["master_last_io_seconds_ago"])
		st.inSync = repl["master_link_status"] == "up" && repl["master_sync_in_progress"] == "0" && err == nil && lastIO >= 0 && lastIO <= syncedWithin
		st.offset, _ = strconv.ParseInt(repl["slave_repl_offset"], 10, 64)
	}
	return st, nil
}

// nodeName is the node's name in addr: the host up to its first dot (the
// pod's name in <pod>.<service>...), or the whole host when it is an IP
// address.
func nodeName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if net.ParseIP(host) != nil {
		return host
	}
	name, _, _ := strings.Cut(host, ".")
	return name
}

// prune deletes the oldest backups under prefix (by the time in their
// names, then offset) beyond keep, never the one just saved.
func prune(ctx context.Context, st snapshotstore.Store, prefix, saved string, keep int) error {
	names, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	backups := backupsUnder(prefix, names)
	oldestFirst := make([]string, len(backups))
	for i, b := range backups {
		oldestFirst[i] = b.Name
	}
	return snapshotstore.Prune(ctx, st, oldestFirst, saved, keep)
}
