// Package etcd is the operator's client of etcd members: the few calls an
// EtcdCluster's steps make, behind a small interface so that the code
// that drives them is tested with a fake (fake.go) rather than a running
// etcd. The real client (gateway.go) calls etcd's JSON gateway.
package etcd

import (
	"context"
	"errors"
	"time"
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
	// Alarms are the alarms raised in the cluster.
	Alarms []Alarm
	// Errors are the other errors the member reports (no leader, say).
	Errors []string
	// Revision is the cluster's revision the member has applied.
	Revision int64
	// DBSize is the size of the member's backend database file, in bytes;
	// DBSizeInUse is the part of it that holds data: the rest is free
	// pages, which only a defragmentation gives back.
	DBSize, DBSizeInUse int64
}

// Alarm is an alarm raised in the cluster.
type Alarm struct {
	// Name is the alarm as etcd names it (NOSPACE, CORRUPT).
	Name string
	// MemberID is the member it is raised for; 0 when etcd does not say.
	MemberID uint64
}

// String is the alarm's name.
func (a Alarm) String() string { return a.Name }

// Member is one member of a member list.
type Member struct {
	ID uint64
	// Name is empty while the member has not started.
	Name     string
	PeerURLs []string
	// ClientURLs are the client URLs the member advertised when it last
	// started (empty before it has).
	ClientURLs []string
	IsLearner  bool
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
	// UpdateMember sets the peer URLs of member id.
	UpdateMember(ctx context.Context, id uint64, peerURLs []string) error
	// MoveLeader hands the leadership to member id; only the leader can.
	MoveLeader(ctx context.Context, id uint64) error
	// Compact compacts the key space up to revision, the history
	// before it dropped, and waits until every member's backend has
	// applied it; a revision compacted already is no error.
	Compact(ctx context.Context, revision int64) error
	// Defragment rewrites the backend of the member at endpoint (one of
	// the client's), giving its free pages back to the file system. The
	// member serves nothing meanwhile.
	Defragment(ctx context.Context, endpoint string) error
	// AlarmDisarm disarms the alarm a.
	AlarmDisarm(ctx context.Context, a Alarm) error
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
