package etcd

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Dial is the Dialer of real members: the client calls etcd's JSON
// gateway, the /v3 API every member serves on its client URL next to gRPC
// (https://etcd.io/docs/v3.6/dev-guide/api_grpc_gateway/), with the
// requests and answers of go.etcd.io/etcd/api/v3's etcdserverpb as JSON.
// etcd's Go client would link gRPC into the manager, which then keeps a
// larger executable in memory for these six calls.
func Dial(_ context.Context, endpoints []string) (Client, error) {
	return dial(gatewayHTTP, endpoints)
}

// TLSDialer is Dial for members that talk TLS (https endpoints), with the
// client configuration cfg. Its clients share one HTTP client, whose
// connections the next pass reuses; Close closes the idle ones, for a
// dialer no longer used (its certificate renewed).
type TLSDialer struct{ http *http.Client }

// NewTLSDialer returns the dialer of the TLS client configuration cfg.
func NewTLSDialer(cfg *tls.Config) *TLSDialer {
	return &TLSDialer{http: newHTTPClient(cfg)}
}

// Dial is an etcd.Dialer.
func (d *TLSDialer) Dial(_ context.Context, endpoints []string) (Client, error) {
	return dial(d.http, endpoints)
}

// Close closes the dialer's idle connections.
func (d *TLSDialer) Close() { d.http.CloseIdleConnections() }

func dial(h *http.Client, endpoints []string) (Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcd client: no endpoint")
	}
	return &gateway{endpoints: endpoints, http: h}, nil
}

// gatewayHTTP is the HTTP client of every plain gateway client: its idle
// connections to a member are reused by the next pass, and closed once
// idle for a while.
var gatewayHTTP = newHTTPClient(nil)

func newHTTPClient(cfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{
		// No proxy: the members are pods, reached by their IPs.
		DialContext:         (&net.Dialer{Timeout: DialTimeout}).DialContext,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: DialTimeout,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// gateway is a Client of the members at endpoints. A call goes to the
// first of them that answers.
type gateway struct {
	endpoints []string
	http      *http.Client
}

// The JSON of etcdserverpb's messages as the gateway writes them: the
// proto field names, 64-bit integers as strings, zero values left out.
// They are declared here, with the fields the calls use, because the
// etcdserverpb package also holds the gRPC services and imports gRPC.
type (
	responseHeader struct {
		ClusterID uint64 `json:"cluster_id,string"`
		MemberID  uint64 `json:"member_id,string"`
		Revision  int64  `json:"revision,string"`
	}
	statusResponse struct {
		Header      *responseHeader `json:"header"`
		Leader      uint64          `json:"leader,string"`
		Version     string          `json:"version"`
		Errors      []string        `json:"errors"`
		DBSize      int64           `json:"dbSize,string"`
		DBSizeInUse int64           `json:"dbSizeInUse,string"`
	}
	compactionRequest struct {
		Revision int64 `json:"revision,string"`
		Physical bool  `json:"physical"`
	}
	alarmRequest struct {
		Action   string `json:"action"`
		MemberID uint64 `json:"memberID,string"`
		Alarm    string `json:"alarm"`
	}
	memberMessage struct {
		ID         uint64   `json:"ID,string"`
		Name       string   `json:"name"`
		PeerURLs   []string `json:"peerURLs"`
		ClientURLs []string `json:"clientURLs"`
		IsLearner  bool     `json:"isLearner"`
	}
	memberListRequest struct {
		Linearizable bool `json:"linearizable"`
	}
	memberListResponse struct {
		Header  *responseHeader `json:"header"`
		Members []memberMessage `json:"members"`
	}
	memberAddRequest struct {
		PeerURLs  []string `json:"peerURLs"`
		IsLearner bool     `json:"isLearner"`
	}
	memberAddResponse struct {
		Member *memberMessage `json:"member"`
	}
	memberIDRequest struct {
		ID uint64 `json:"ID,string"`
	}
	memberUpdateRequest struct {
		ID       uint64   `json:"ID,string"`
		PeerURLs []string `json:"peerURLs"`
	}
	moveLeaderRequest struct {
		TargetID uint64 `json:"targetID,string"`
	}
)

func (c *gateway) Status(ctx context.Context, endpoint string) (*Status, error) {
	var resp statusResponse
	if err := c.call(ctx, []string{endpoint}, "/v3/maintenance/status", struct{}{}, &resp); err != nil {
		return nil, err
	}
	if resp.Header == nil {
		return nil, errors.New("status without a header")
	}
	st := &Status{ClusterID: resp.Header.ClusterID, MemberID: resp.Header.MemberID, Leader: resp.Leader, Version: resp.Version,
		Revision: resp.Header.Revision, DBSize: resp.DBSize, DBSizeInUse: resp.DBSizeInUse}
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
// lists each raised alarm as "memberID:<id> alarm:<NAME> ", the ID in
// decimal.
func alarmOf(e string) (Alarm, bool) {
	member, rest, ok := strings.Cut(e, "alarm:")
	if !ok {
		return Alarm{}, false
	}
	a := Alarm{Name: strings.TrimSpace(rest)}
	if _, id, ok := strings.Cut(member, "memberID:"); ok {
		a.MemberID, _ = strconv.ParseUint(strings.TrimSpace(id), 10, 64)
	}
	return a, a.Name != ""
}

func (c *gateway) MemberList(ctx context.Context) (*MemberList, error) {
	var resp memberListResponse
	if err := c.call(ctx, c.endpoints, "/v3/cluster/member/list", memberListRequest{Linearizable: false}, &resp); err != nil {
		return nil, err
	}
	l := &MemberList{}
	if resp.Header != nil {
		l.ClusterID, l.MemberID = resp.Header.ClusterID, resp.Header.MemberID
	}
	for _, m := range resp.Members {
		l.Members = append(l.Members, Member(m))
	}
	return l, nil
}

func (c *gateway) AddMember(ctx context.Context, peerURL string, learner bool) (Member, error) {
	var resp memberAddResponse
	if err := c.call(ctx, c.endpoints, "/v3/cluster/member/add", memberAddRequest{PeerURLs: []string{peerURL}, IsLearner: learner}, &resp); err != nil {
		return Member{}, notReady(err)
	}
	if resp.Member == nil {
		return Member{}, errors.New("member added: the answer names no member")
	}
	return Member(*resp.Member), nil
}

func (c *gateway) PromoteMember(ctx context.Context, id uint64) error {
	return notReady(c.call(ctx, c.endpoints, "/v3/cluster/member/promote", memberIDRequest{ID: id}, nil))
}

func (c *gateway) RemoveMember(ctx context.Context, id uint64) error {
	return notReady(c.call(ctx, c.endpoints, "/v3/cluster/member/remove", memberIDRequest{ID: id}, nil))
}

func (c *gateway) UpdateMember(ctx context.Context, id uint64, peerURLs []string) error {
	return notReady(c.call(ctx, c.endpoints, "/v3/cluster/member/update", memberUpdateRequest{ID: id, PeerURLs: peerURLs}, nil))
}

func (c *gateway) MoveLeader(ctx context.Context, id uint64) error {
	return c.call(ctx, c.endpoints, "/v3/maintenance/transfer-leadership", moveLeaderRequest{TargetID: id}, nil)
}

// compactedMessage is etcd's refusal of a compaction to a revision
// compacted already (rpctypes.ErrGRPCCompacted).
const compactedMessage = "mvcc: required revision has been compacted"

func (c *gateway) Compact(ctx context.Context, revision int64) error {
	err := c.call(ctx, c.endpoints, "/v3/kv/compaction", compactionRequest{Revision: revision, Physical: true}, nil)
	if r, ok := errors.AsType[*Refusal](err); ok && strings.Contains(r.Message, compactedMessage) {
		return nil
	}
	return err
}

func (c *gateway) Defragment(ctx context.Context, endpoint string) error {
	return c.call(ctx, []string{endpoint}, "/v3/maintenance/defragment", struct{}{}, nil)
}

func (c *gateway) AlarmDisarm(ctx context.Context, a Alarm) error {
	return c.call(ctx, c.endpoints, "/v3/maintenance/alarm", alarmRequest{Action: "DEACTIVATE", MemberID: a.MemberID, Alarm: a.Name}, nil)
}

// Close implements Client: the connections are shared (gatewayHTTP).
func (c *gateway) Close() error { return nil }

// Refusal is etcd's refusal of a call: the gRPC status code and message
// the gateway answers with.
type Refusal struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (r *Refusal) Error() string { return r.Message }

// The messages of etcd's refusals of a membership change for now
// (go.etcd.io/etcd/api/v3/v3rpc/rpctypes: ErrGRPCUnhealthy,
// ErrGRPCMemberNotEnoughStarted, ErrGRPCMemberLearnerNotReady), matched
// by their message as etcd's own client does.
var notReadyMessages = []string{
	"etcdserver: unhealthy cluster",
	"etcdserver: re-configuration failed due to not enough started members",
	"in sync with leader",
}

// notReady wraps in ErrNotReady the refusals with which etcd refuses a
// membership change for now (its strict reconfiguration check, a learner
// not in sync with the leader).
func notReady(err error) error {
	var r *Refusal
	if errors.As(err, &r) {
		for _, m := range notReadyMessages {
			if strings.Contains(r.Message, m) {
				return fmt.Errorf("%w: %w", ErrNotReady, err)
			}
		}
	}
	return err
}

// maxAnswer bounds what is read of an answer.
const maxAnswer = 1 << 20

// call posts req as JSON to path on the first of endpoints that answers
// and decodes the answer into resp (nil: read and drop it). A member that
// cannot be reached is skipped; a refusal is final, returned as a
// *Refusal.
func (c *gateway) call(ctx context.Context, endpoints []string, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var errs []error
	for _, endpoint := range endpoints {
		err := c.post(ctx, strings.TrimSuffix(endpoint, "/")+path, body, resp)
		var r *Refusal
		if err == nil || errors.As(err, &r) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *gateway) post(ctx context.Context, url string, body []byte, resp any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	r, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = r.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(r.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	if r.StatusCode != http.StatusOK {
		refusal := &Refusal{}
		if json.Unmarshal(data, refusal) != nil || refusal.Message == "" {
			return fmt.Errorf("%s: %s", url, r.Status)
		}
		return refusal
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}
