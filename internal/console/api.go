package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/internal/resources/redisenterprisecluster"
)

// DatabaseUID is the uid of the one database (bdb) a cluster holds.
const DatabaseUID = 1

// APICluster is GET /v1/cluster's answer.
type APICluster struct {
	Name       string      `json:"name"`
	Namespace  string      `json:"namespace"`
	State      string      `json:"state"`
	Primary    string      `json:"primary"`
	NodesCount int         `json:"nodes_count"`
	Conditions []Condition `json:"conditions"`
	// PrimaryHistory is the last changes of the primary, newest first.
	PrimaryHistory []redisv1alpha1.PrimaryChange `json:"primary_history"`
	// LastSwitchover is the last switchover request the operator
	// handled.
	LastSwitchover any `json:"last_switchover,omitempty"`
}

// APINode is one node of GET /v1/nodes.
type APINode struct {
	UID int `json:"uid"`
	// Name is the node's pod.
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Status is "active" for a healthy node, "down" otherwise.
	Status     string   `json:"status"`
	Role       string   `json:"role"`
	Answered   bool     `json:"answered"`
	UsedMemory int64    `json:"used_memory"`
	MaxMemory  int64    `json:"max_memory"`
	Clients    int64    `json:"conns"`
	OpsPerSec  int64    `json:"ops_per_sec"`
	LagBytes   *int64   `json:"replication_lag_bytes,omitempty"`
	LagSeconds *float64 `json:"replication_lag_seconds,omitempty"`
}

// APIDatabase is GET /v1/bdbs/1's answer: the cluster's dataset.
type APIDatabase struct {
	UID  int    `json:"uid"`
	Name string `json:"name"`
	// Status is "active" when the cluster runs, "active-change-pending"
	// during a rolling update, "pending" before it runs (or while it
	// hibernates), "error" in the Error state.
	Status     string `json:"status"`
	MemorySize int64  `json:"memory_size"`
	UsedMemory int64  `json:"used_memory"`
	// Replication is whether the primary has replicas.
	Replication bool          `json:"replication"`
	Endpoints   []APIEndpoint `json:"endpoints"`
	TLS         bool          `json:"ssl"`
	// Backup is whether backups are on (spec.backup).
	Backup               bool       `json:"backup"`
	BackupInterval       int64      `json:"backup_interval,omitempty"`
	BackupStatus         string     `json:"backup_status,omitempty"`
	BackupFailureReason  string     `json:"backup_failure_reason,omitempty"`
	LastBackupTime       *time.Time `json:"last_backup_time,omitempty"`
	BackupLocation       string     `json:"backup_location,omitempty"`
	BackupNextDue        *time.Time `json:"backup_next_due,omitempty"`
	BackupLastRequest    string     `json:"backup_last_request,omitempty"`
	BackupPendingRequest string     `json:"backup_pending_request,omitempty"`
}

// APIEndpoint is where clients reach the database.
type APIEndpoint struct {
	DNSAddress string `json:"dns_address"`
	Port       int    `json:"port"`
}

// APIAction is an action's answer (202).
type APIAction struct {
	ActionUID  string `json:"action_uid"`
	Annotation string `json:"annotation"`
	Message    string `json:"message"`
}

// API is the REST API's handler: every path needs HTTP basic auth with
// the login of the cluster's Secret, and the same lockout as the
// console's logins.
func (s *Server) API() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/cluster", s.apiOverview(func(ov Overview) any { return apiCluster(ov) }))
	mux.HandleFunc("GET /v1/nodes", s.apiOverview(func(ov Overview) any { return apiNodes(ov) }))
	mux.HandleFunc("GET /v1/nodes/{uid}", s.apiOverview(nil))
	mux.HandleFunc("GET /v1/bdbs", s.apiOverview(func(ov Overview) any { return []APIDatabase{apiDatabase(ov)} }))
	mux.HandleFunc("GET /v1/bdbs/{uid}", s.apiOverview(nil))
	mux.HandleFunc("POST /v1/bdbs/{uid}/actions/backup", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("uid") != strconv.Itoa(DatabaseUID) {
			writeJSONError(w, http.StatusNotFound, "no database "+r.PathValue("uid")+": this cluster holds database 1")
			return
		}
		res, err := s.Backup(r.Context())
		s.apiAction(w, res, err)
	})
	mux.HandleFunc("POST /v1/cluster/actions/switchover", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Node string `json:"node"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil || body.Node == "" {
			writeJSONError(w, http.StatusBadRequest, `the body must be {"node": "<pod name>"} or {"node": "any"}`)
			return
		}
		res, err := s.Switchover(r.Context(), body.Node)
		s.apiAction(w, res, err)
	})
	return securityHeaders(s.basicAuth(muxErrorsAsJSON(mux)))
}

// apiOverview answers what answer makes of the overview; with answer nil,
// the node or database of the path's uid (404 when there is none).
func (s *Server) apiOverview(answer func(Overview) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ov, err := s.Overview(r.Context())
		if err != nil {
			s.cfg.Log.Error(err, "Cannot make the overview")
			writeJSONError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		if answer != nil {
			writeJSON(w, http.StatusOK, answer(ov))
			return
		}
		uid, err := strconv.Atoi(r.PathValue("uid"))
		if err != nil {
			writeJSONError(w, http.StatusNotFound, "no such uid: "+r.PathValue("uid"))
			return
		}
		if r.Pattern == "GET /v1/bdbs/{uid}" {
			if uid != DatabaseUID {
				writeJSONError(w, http.StatusNotFound, "no database "+strconv.Itoa(uid)+": this cluster holds database 1")
				return
			}
			writeJSON(w, http.StatusOK, apiDatabase(ov))
			return
		}
		for _, n := range apiNodes(ov) {
			if n.UID == uid {
				writeJSON(w, http.StatusOK, n)
				return
			}
		}
		writeJSONError(w, http.StatusNotFound, "no node "+strconv.Itoa(uid))
	}
}

// apiAction answers an action's result (202) or error.
func (s *Server) apiAction(w http.ResponseWriter, res Result, err error) {
	if !s.actionFailed(w, err) {
		writeJSON(w, http.StatusAccepted, APIAction{ActionUID: res.Request, Annotation: res.Annotation, Message: res.Message})
	}
}

// basicAuth lets through the requests with the cluster's login in HTTP
// basic auth: 401 without it or with a wrong one, 429 while the client is
// locked out.
func (s *Server) basicAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		username, password, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="redis-console", charset="UTF-8"`)
			writeJSONError(w, http.StatusUnauthorized, "basic auth with the cluster's username and password is required")
			return
		}
		err := s.auth.check(r.Context(), clientAddr(r), username, password)
		switch {
		case errors.Is(err, errLockedOut):
			writeJSONError(w, http.StatusTooManyRequests, err.Error())
		case errors.Is(err, errWrongCredentials):
			w.Header().Set("WWW-Authenticate", `Basic realm="redis-console", charset="UTF-8"`)
			writeJSONError(w, http.StatusUnauthorized, err.Error())
		case err != nil:
			s.cfg.Log.Error(err, "Cannot check credentials")
			writeJSONError(w, http.StatusServiceUnavailable, "the cluster's credentials cannot be read now")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// muxErrorsAsJSON answers the mux's own errors as JSON: 404 for a path
// it does not serve, 405 (with its Allow header) for one it serves with
// other methods.
func muxErrorsAsJSON(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			mux.ServeHTTP(&errorAsJSON{ResponseWriter: w}, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// errorAsJSON turns an error written as text into the JSON error of its
// status.
type errorAsJSON struct {
	http.ResponseWriter
	replaced bool
}

func (e *errorAsJSON) WriteHeader(status int) {
	if status < 400 {
		e.ResponseWriter.WriteHeader(status)
		return
	}
	e.replaced = true
	writeJSONError(e.ResponseWriter, status, http.StatusText(status)+": see docs/console.md for the paths and their methods")
}

func (e *errorAsJSON) Write(b []byte) (int, error) {
	if e.replaced {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

// apiCluster is the cluster's answer.
func apiCluster(ov Overview) APICluster {
	c := APICluster{Name: ov.Cluster, Namespace: ov.Namespace, State: ov.State, Primary: ov.Primary, NodesCount: len(ov.Nodes),
		Conditions: ov.Conditions, PrimaryHistory: ov.History}
	if ov.LastSwitchover != nil {
		c.LastSwitchover = ov.LastSwitchover
	}
	return c
}

// apiNodes are the nodes' answers.
func apiNodes(ov Overview) []APINode {
	nodes := make([]APINode, 0, len(ov.Nodes))
	for _, n := range ov.Nodes {
		status := "down"
		if n.Healthy {
			status = "active"
		}
		nodes = append(nodes, APINode{UID: n.UID, Name: n.Name, Addr: n.Addr, Status: status, Role: n.Role, Answered: n.Answered,
			UsedMemory: n.UsedMemory, MaxMemory: n.MaxMemory, Clients: n.Clients, OpsPerSec: n.OpsPerSec, LagBytes: n.LagBytes, LagSeconds: n.LagSeconds})
	}
	return nodes
}

// apiDatabase is the database's answer.
func apiDatabase(ov Overview) APIDatabase {
	host, port := splitEndpoint(ov.Endpoint)
	db := APIDatabase{UID: DatabaseUID, Name: ov.Cluster, Status: databaseStatus(ov.State), Endpoints: []APIEndpoint{{DNSAddress: host, Port: port}},
		TLS: ov.TLS, Backup: ov.Backup.Configured, BackupInterval: ov.Backup.IntervalSeconds, BackupStatus: ov.Backup.Status,
		BackupFailureReason: ov.Backup.FailureReason, LastBackupTime: ov.Backup.LastSuccess, BackupLocation: ov.Backup.Location,
		BackupNextDue: ov.Backup.NextDue, BackupLastRequest: ov.Backup.LastRequest, BackupPendingRequest: ov.Backup.PendingRequest}
	for _, n := range ov.Nodes {
		if n.Name == ov.Primary {
			db.MemorySize, db.UsedMemory = n.MaxMemory, n.UsedMemory
		}
		if n.Role == redisv1alpha1.RoleReplica {
			db.Replication = true
		}
	}
	return db
}

// databaseStatus is a database's status in Redis Enterprise's words.
func databaseStatus(state string) string {
	switch redisv1alpha1.ClusterState(state) {
	case redisv1alpha1.StateRunning:
		return "active"
	case redisv1alpha1.StateRunningRollingUpdate:
		return "active-change-pending"
	case redisv1alpha1.StateError:
		return "error"
	default:
		return "pending"
	}
}

// splitEndpoint splits host:port.
func splitEndpoint(endpoint string) (string, int) {
	for i := len(endpoint) - 1; i >= 0; i-- {
		if endpoint[i] == ':' {
			port, _ := strconv.Atoi(endpoint[i+1:])
			return endpoint[:i], port
		}
	}
	return endpoint, redisenterprisecluster.Port
}
