package etcdsnapshot

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/app-operator/app-operator/internal/backuprun"
	"github.com/app-operator/app-operator/internal/snapshotstore"
)

// statusTimeout bounds each member's answer to the status request.
const statusTimeout = 5 * time.Second

// SaveOptions says what to back up and where.
type SaveOptions struct {
	// Endpoints are the members' client URLs.
	Endpoints []string
	// TLS, when set, is the client TLS configuration for the members
	// (https endpoints); nil talks plain http.
	TLS *tls.Config
	// To is the target: s3://<bucket>/<path> or a local path. The backup is
	// stored as <path>_c<cluster ID>_v<revision>_<time>.
	To string
	// S3 says how to reach S3 when To is an s3:// URL.
	S3 S3Options
	// MaxBackups, when above 0, is how many backups of the same prefix to
	// keep: the oldest beyond it are deleted after a successful save.
	MaxBackups int
	// Logger logs the etcd client's messages; nil logs nothing.
	Logger *zap.Logger
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
}

// memberStatus is one member's answer to the status request.
type memberStatus struct {
	endpoint  string
	id        uint64
	clusterID uint64
	leader    uint64
	revision  int64
	raftIndex uint64
	version   string
}

// Save takes a snapshot from the member that has a leader and the highest
// revision (then raft index), checks its sha256 and stores it under To. The
// backup's name appears only once the whole snapshot was stored and checked.
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
	if len(opts.Endpoints) == 0 {
		return Result{}, failure(ReasonInvalidArgument, "no etcd endpoints given")
	}
	st, prefix, err := snapshotstore.Reach(ctx, opts.To, opts.S3)
	if err != nil {
		return Result{}, err
	}
	source, err := pickMember(ctx, opts)
	if err != nil {
		return Result{}, err
	}

	cli, err := newClient(source.endpoint, opts)
	if err != nil {
		return Result{}, err
	}
	defer cli.Close()
	memberName := memberNameOf(ctx, cli, source.id)

	takenAt := opts.Now().UTC()
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return Result{}, failure(ReasonUnreachable, "the member %s did not send a snapshot: %w", source.endpoint, err)
	}
	defer resp.Snapshot.Close()
	revision, clusterID := source.revision, source.clusterID
	if resp.Header != nil && resp.Header.Revision > 0 {
		revision = resp.Header.Revision
	}
	if resp.Header != nil && resp.Header.ClusterId != 0 {
		clusterID = resp.Header.ClusterId
	}
	// The cluster ID in the name tells the backups of one cluster from
	// those of another that wrote to the same prefix (see chooseBackup).
	name := BackupName(prefix, clusterID, revision, takenAt)
	size, err := snapshotstore.Upload(ctx, st, name, newVerifyingReader(resp.Snapshot), source.endpoint)
	if err != nil {
		return Result{}, err
	}

	res := Result{
		Report:      backuprun.Report{Key: st.Display(name), Size: size, TakenAt: takenAt.UTC().Truncate(time.Second)},
		Revision:    revision,
		EtcdVersion: source.version,
		Member:      memberName,
	}
	if opts.MaxBackups > 0 {
		if err := prune(ctx, st, prefix, name, opts.MaxBackups); err != nil {
			return res, err
		}
	}
	return res, nil
}

// newClient is a client of one member.
func newClient(endpoint string, opts SaveOptions) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: statusTimeout,
		TLS:         opts.TLS,
		Logger:      opts.Logger.Named("client"),
	})
	if err != nil {
		return nil, failure(ReasonInvalidArgument, "cannot set up a client of %s: %w", endpoint, err)
	}
	return cli, nil
}

// pickMember asks every endpoint for its status and returns the member with
// a leader and the highest revision, then raft index. A member without a
// leader is never chosen.
func pickMember(ctx context.Context, opts SaveOptions) (memberStatus, error) {
	var (
		answered []memberStatus
		failures []string
	)
	for _, ep := range opts.Endpoints {
		st, err := statusOf(ctx, ep, opts)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", ep, err))
			continue
		}
		answered = append(answered, st)
	}
	var led []memberStatus
	for _, st := range answered {
		if st.leader != 0 {
			led = append(led, st)
		}
	}
	if len(led) == 0 {
		if len(answered) > 0 {
			return memberStatus{}, &Error{Reason: ReasonNoLeader, Err: fmt.Errorf("no member has a leader (%d of %d answered)", len(answered), len(opts.Endpoints))}
		}
		return memberStatus{}, &Error{Reason: ReasonUnreachable, Err: fmt.Errorf("no etcd member answered (%s)", strings.Join(failures, "; "))}
	}
	sort.SliceStable(led, func(i, j int) bool {
		if led[i].revision != led[j].revision {
			return led[i].revision > led[j].revision
		}
		return led[i].raftIndex > led[j].raftIndex
	})
	return led[0], nil
}

// statusOf asks one member for its status.
func statusOf(ctx context.Context, endpoint string, opts SaveOptions) (memberStatus, error) {
	cli, err := newClient(endpoint, opts)
	if err != nil {
		return memberStatus{}, err
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := cli.Status(sctx, endpoint)
	if err != nil {
		return memberStatus{}, err
	}
	st := memberStatus{
		endpoint:  endpoint,
		leader:    resp.Leader,
		raftIndex: resp.RaftAppliedIndex,
		version:   resp.Version,
	}
	if resp.RaftAppliedIndex == 0 {
		st.raftIndex = resp.RaftIndex
	}
	if resp.Header != nil {
		st.id = resp.Header.MemberId
		st.clusterID = resp.Header.ClusterId
		st.revision = resp.Header.Revision
	}
	return st, nil
}

// memberNameOf returns the name of the member id as the member itself knows
// the membership, or its id in hex when it cannot say.
func memberNameOf(ctx context.Context, cli *clientv3.Client, id uint64) string {
	mctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	resp, err := cli.MemberList(mctx, clientv3.WithSerializable())
	if err == nil {
		for _, m := range resp.Members {
			if m.ID == id && m.Name != "" {
				return m.Name
			}
		}
	}
	return fmt.Sprintf("%x", id)
}

// prune deletes the oldest backups under prefix (by the time in their
// names, then revision) beyond keep, never the one just saved. Time, not
// revision: a cluster made again or restored from an older snapshot has
// lower revisions than the backups it follows.
func prune(ctx context.Context, st snapshotstore.Store, prefix, saved string, keep int) error {
	names, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	return snapshotstore.Prune(ctx, st, oldestFirst(backupsUnder(prefix, names)), saved, keep)
}

// oldestFirst is the names of backups, which backupsUnder orders oldest
// first.
func oldestFirst(backups []backup) []string {
	names := make([]string, len(backups))
	for i, b := range backups {
		names[i] = b.Name
	}
	return names
}
