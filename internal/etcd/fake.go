package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Fake is a set of etcd members in memory, reached by endpoint, for tests
// of the code that drives a cluster: each endpoint answers as the member
// it is set to (or not at all), with the membership of its cluster.
type Fake struct {
	mu sync.Mutex
	// Endpoints maps an endpoint to the member that answers there; an
	// endpoint missing from it does not answer.
	Endpoints map[string]*FakeMember
	// Calls records the changes asked for, in order ("add", "promote",
	// "remove", "update", "move-leader", "compact", "defragment",
	// "disarm", with their argument).
	Calls []string
	// Refuse, when set, is returned by every membership change.
	Refuse error
	// Crash, when set, is asked before each change (by its index among
	// them, from 0, and its text): true stops the operator there: OnCrash
	// runs (it cancels the pass) and the change fails without taking
	// effect, unless CrashAfter: then it takes effect first (the operator
	// stopped as the member answered).
	Crash      func(i int, call string) bool
	OnCrash    func()
	CrashAfter bool
	changes    int
	nextID     uint64
}

// FakeMember is the member answering at an endpoint.
type FakeMember struct {
	Status Status
	// Members is the membership this member knows.
	Members []Member
	// Compactable is how much of Status.DBSizeInUse a compaction frees
	// (the history a client left); a defragmentation then shrinks
	// Status.DBSize to what is in use.
	Compactable int64
}

var errUnreachable = errors.New("fake: endpoint does not answer")

// Dial is the Fake's Dialer.
func (f *Fake) Dial(_ context.Context, endpoints []string) (Client, error) {
	return &fakeClient{f: f, endpoints: slices.Clone(endpoints)}, nil
}

type fakeClient struct {
	f         *Fake
	endpoints []string
}

func (c *fakeClient) member(endpoint string) (*FakeMember, error) {
	m := c.f.Endpoints[endpoint]
	if m == nil {
		return nil, errUnreachable
	}
	return m, nil
}

// first is the first of the client's endpoints that answers.
func (c *fakeClient) first() (*FakeMember, error) {
	for _, e := range c.endpoints {
		if m := c.f.Endpoints[e]; m != nil {
			return m, nil
		}
	}
	return nil, errUnreachable
}

func (c *fakeClient) Status(_ context.Context, endpoint string) (*Status, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if !slices.Contains(c.endpoints, endpoint) {
		return nil, fmt.Errorf("fake: %s is not an endpoint of the client", endpoint)
	}
	m, err := c.member(endpoint)
	if err != nil {
		return nil, err
	}
	st := m.Status
	return &st, nil
}

func (c *fakeClient) MemberList(context.Context) (*MemberList, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, err := c.first()
	if err != nil {
		return nil, err
	}
	return &MemberList{ClusterID: m.Status.ClusterID, MemberID: m.Status.MemberID, Members: slices.Clone(m.Members)}, nil
}

// change records the change call and returns the member that takes it;
// crash says the operator stops once the change has taken effect (see
// stopped).
func (c *fakeClient) change(call string) (m *FakeMember, crash bool, err error) {
	crash = c.f.Crash != nil && c.f.Crash(c.f.changes, call)
	c.f.changes++
	if crash && !c.f.CrashAfter {
		return nil, false, c.f.stopped(true)
	}
	c.f.Calls = append(c.f.Calls, call)
	if c.f.Refuse != nil {
		return nil, false, c.f.Refuse
	}
	m, err = c.first()
	return m, crash, err
}

// stopped is the error of a change that stops the operator (crash), after
// OnCrash has run; nil otherwise.
func (f *Fake) stopped(crash bool) error {
	if !crash {
		return nil
	}
	if f.OnCrash != nil {
		f.OnCrash()
	}
	return context.Canceled
}

// cluster returns the members of m's cluster.
func (f *Fake) cluster(m *FakeMember) []*FakeMember {
	var out []*FakeMember
	for _, o := range f.Endpoints {
		if o != nil && o.Status.ClusterID == m.Status.ClusterID {
			out = append(out, o)
		}
	}
	return out
}

func (c *fakeClient) AddMember(_ context.Context, peerURL string, learner bool) (Member, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("add %s learner=%v", peerURL, learner))
	if err != nil {
		return Member{}, err
	}
	c.f.nextID++
	added := Member{ID: 1000 + c.f.nextID, PeerURLs: []string{peerURL}, IsLearner: learner}
	c.f.addToCluster(m.Status.ClusterID, added)
	return added, c.f.stopped(crash)
}

// addToCluster adds mem to the membership every member of cluster knows.
func (f *Fake) addToCluster(cluster uint64, mem Member) {
	for _, m := range f.Endpoints {
		if m != nil && m.Status.ClusterID == cluster {
			m.Members = append(m.Members, mem)
		}
	}
}

func (c *fakeClient) PromoteMember(_ context.Context, id uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("promote %x", id))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		for i := range o.Members {
			if o.Members[i].ID == id {
				o.Members[i].IsLearner = false
			}
		}
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) RemoveMember(_ context.Context, id uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("remove %x", id))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		o.Members = slices.DeleteFunc(o.Members, func(x Member) bool { return x.ID == id })
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) UpdateMember(_ context.Context, id uint64, peerURLs []string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("update %x %v", id, peerURLs))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		for i := range o.Members {
			if o.Members[i].ID == id {
				o.Members[i].PeerURLs = slices.Clone(peerURLs)
			}
		}
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) MoveLeader(_ context.Context, id uint64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("move-leader %x", id))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		o.Status.Leader = id
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) Compact(_ context.Context, revision int64) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("compact %d", revision))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		o.Status.DBSizeInUse -= o.Compactable
		o.Compactable = 0
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) Defragment(_ context.Context, endpoint string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if !slices.Contains(c.endpoints, endpoint) {
		return fmt.Errorf("fake: %s is not an endpoint of the client", endpoint)
	}
	m, err := c.member(endpoint)
	if err != nil {
		return err
	}
	crash := c.f.Crash != nil && c.f.Crash(c.f.changes, "defragment "+endpoint)
	c.f.changes++
	if crash && !c.f.CrashAfter {
		return c.f.stopped(true)
	}
	c.f.Calls = append(c.f.Calls, fmt.Sprintf("defragment %x", m.Status.MemberID))
	if c.f.Refuse != nil {
		return c.f.Refuse
	}
	m.Status.DBSize = m.Status.DBSizeInUse
	return c.f.stopped(crash)
}

func (c *fakeClient) AlarmDisarm(_ context.Context, a Alarm) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	m, crash, err := c.change(fmt.Sprintf("disarm %s %x", a.Name, a.MemberID))
	if err != nil {
		return err
	}
	for _, o := range c.f.cluster(m) {
		o.Status.Alarms = slices.DeleteFunc(slices.Clone(o.Status.Alarms), func(x Alarm) bool { return x == a })
	}
	return c.f.stopped(crash)
}

func (c *fakeClient) Close() error { return nil }
