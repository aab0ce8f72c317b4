// Package etcd is the operator's client of etcd members: the few calls an
// EtcdCluster's steps make, behind a small interface so that the code
// that drives them is tested with a fake (fake.go) rather than a running
// etcd.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DialTimeout bounds the connection of a client; each call is bounded by
// its own context.
const DialTimeout = 2 * time.Second

// Status is what one member says of itself.
type Status struct {
	// ClusterID is the ID of the cluster the member belongs to.
	ClusterID uint64
	// MemberID is the member's own ID.
	MemberID uint64
	// Leader is the ID of the leader the member knows; 0 when none.
	Leader  uint64
	Version string
	// Alarms are the alarms raised in the cluster, as etcd names them
	// (NOSPACE, CORRUPT).
	Alarms []string
	// Errors are the other errors the member reports (no leader, say).
	Errors []string
}

// Member is one member of a member list.
type Member struct {
	ID uint64
	// Name is empty while the member has not started.
	Name      string
	PeerURLs  []string
	IsLearner bool
}

// MemberList is a member's view of the membership.
type MemberList struct {
	// ClusterID and MemberID identify the cluster and the member that
	// answered.
	ClusterID, MemberID uint64
	Members             []Member
}

// Client is a client of one or more members of one cluster.
type Client interface {
	// Status asks the member at endpoint (one of the client's) for its
	// status.
	Status(ctx context.Context, endpoint string) (*Status, error)
	// MemberList returns the membership as the member asked knows it,
	// without a quorum (a serializable read): a member that lost its
	// quorum still says who the members are.
	MemberList(ctx context.Context) (*MemberList, error)
	// AddMember adds a member of the given peer URL, as a learner when
	// learner is true.
	AddMember(ctx context.Context, peerURL string, learner bool) (Member, error)
	PromoteMember(ctx context.Context, id uint64) error
	RemoveMember(ctx context.Context, id uint64) error
	// MoveLeader hands the leadership to member id; only the leader can.
	MoveLeader(ctx context.Context, id uint64) error
	Close() error
}

// Dialer returns a client of the members at endpoints.
type Dialer func(ctx context.Context, endpoints []string) (Client, error)

// Errors etcd answers that the steps tell apart.
var (
	// ErrNotReady: etcd refuses a membership change for now (a member
	// promoted or restarted less than 5 s ago, too few started members,
	// a learner that has not caught up).
	ErrNotReady = errors.New("etcd refuses the change for now")
)

// Dial is the Dialer of real members, through go.etcd.io/etcd/client/v3.
func Dial(ctx context.Context, endpoints []string) (Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: DialTimeout,
		Context:     ctx,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &client{cli: cli}, nil
}

type client struct{ cli *clientv3.Client }

func (c *client) Status(ctx context.Context, endpoint string) (*Status, error) {
	resp, err := c.cli.Status(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	if resp.Header == nil {
		return nil, errors.New("status without a header")
	}
	st := &Status{ClusterID: resp.Header.ClusterId, MemberID: resp.Header.MemberId, Leader: resp.Leader, Version: resp.Version}
	for _, e := range resp.Errors {
		if alarm, ok := alarmOf(e); ok {
			st.Alarms = append(st.Alarms, alarm)
		} else {
			st.Errors = append(st.Errors, e)
		}
	}
	return st, nil
}

// alarmOf returns the alarm an error of a status answer reports: etcd
// lists each raised alarm as "memberID:<id> alarm:<NAME> ".
func alarmOf(e string) (string, bool) {
	_, rest, ok := strings.Cut(e, "alarm:")
	if !ok {
		return "", false
	}
	name := strings.TrimSpace(rest)
	return name, name != ""
}

func (c *client) MemberList(ctx context.Context) (*MemberList, error) {
	resp, err := c.cli.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, err
	}
	l := &MemberList{}
	if resp.Header != nil {
		l.ClusterID, l.MemberID = resp.Header.ClusterId, resp.Header.MemberId
	}
	for _, m := range resp.Members {
		l.Members = append(l.Members, Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, IsLearner: m.IsLearner})
	}
	return l, nil
}

func (c *client) AddMember(ctx context.Context, peerURL string, learner bool) (Member, error) {
	add := c.cli.MemberAdd
	if learner {
		add = c.cli.MemberAddAsLearner
	}
	resp, err := add(ctx, []string{peerURL})
	if err != nil {
		return Member{}, notReady(err)
	}
	return Member{ID: resp.Member.ID, Name: resp.Member.Name, PeerURLs: resp.Member.PeerURLs, IsLearner: resp.Member.IsLearner}, nil
}

func (c *client) PromoteMember(ctx context.Context, id uint64) error {
	_, err := c.cli.MemberPromote(ctx, id)
	return notReady(err)
}

func (c *client) RemoveMember(ctx context.Context, id uint64) error {
	_, err := c.cli.MemberRemove(ctx, id)
	return notReady(err)
}

func (c *client) MoveLeader(ctx context.Context, id uint64) error {
	_, err := c.cli.MoveLeader(ctx, id)
	return err
}

func (c *client) Close() error { return c.cli.Close() }

// notReady wraps in ErrNotReady the errors with which etcd refuses a
// membership change for now (its strict reconfiguration check, a learner
// not in sync with the leader).
func notReady(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrMemberNotEnoughStarted) ||
		errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || strings.Contains(err.Error(), "in sync with leader") {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return err
}
