package console_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	redisv1alpha1 "github.com/app-operator/app-operator/api/redislabs/v1alpha1"
	"github.com/app-operator/app-operator/api/switchover"
	"github.com/app-operator/app-operator/internal/console"
)

// Every path of the REST API answers the status codes docs/console.md
// gives it.
func TestAPIStatusCodes(t *testing.T) {
	f := newFixture(t, options{backup: true})
	hc := f.api.Client()
	tests := []struct {
		name               string
		method, path, body string
		user, pass         string
		want               int
		wantIn             string
	}{
		{name: "should refuse a request without credentials", method: "GET", path: "/v1/cluster", want: 401},
		{name: "should refuse a wrong password", method: "GET", path: "/v1/cluster", user: username, pass: "wrong", want: 401},
		{name: "should refuse credentials without a path it serves too", method: "GET", path: "/v1/nope", want: 401},
		{name: "should answer the cluster with its primary", method: "GET", path: "/v1/cluster", want: 200, wantIn: `"primary": "c-0"`},
		{name: "should answer the nodes", method: "GET", path: "/v1/nodes", want: 200, wantIn: `"uid": 3`},
		{name: "should answer a node by uid, its ordinal plus one", method: "GET", path: "/v1/nodes/2", want: 200, wantIn: `"name": "c-1"`},
		{name: "should answer a node that is not healthy as down", method: "GET", path: "/v1/nodes/3", want: 200, wantIn: `"status": "down"`},
		{name: "should answer 404 for a node that does not exist", method: "GET", path: "/v1/nodes/4", want: 404},
		{name: "should answer 404 for a node uid that is not a number", method: "GET", path: "/v1/nodes/x", want: 404},
		{name: "should answer the databases", method: "GET", path: "/v1/bdbs", want: 200, wantIn: `"backup": true`},
		{name: "should answer database 1", method: "GET", path: "/v1/bdbs/1", want: 200, wantIn: `"dns_address": "c.` + f.ns + `.svc"`},
		{name: "should answer 404 for another database", method: "GET", path: "/v1/bdbs/2", want: 404},
		{name: "should answer 404 for a path it does not serve", method: "GET", path: "/v1/nope", want: 404},
		{name: "should answer 405 for a wrong method", method: "DELETE", path: "/v1/cluster", want: 405},
		{name: "should answer 405 for a GET of an action", method: "GET", path: "/v1/bdbs/1/actions/backup", want: 405},
		{name: "should refuse a backup of another database", method: "POST", path: "/v1/bdbs/2/actions/backup", want: 404},
		{name: "should take a backup", method: "POST", path: "/v1/bdbs/1/actions/backup", want: 202, wantIn: `"action_uid": "console-`},
		{name: "should refuse a switchover without a body", method: "POST", path: "/v1/cluster/actions/switchover", want: 400},
		{name: "should refuse a switchover without a node", method: "POST", path: "/v1/cluster/actions/switchover", body: `{}`, want: 400},
		{name: "should refuse a switchover to a replica not in sync", method: "POST", path: "/v1/cluster/actions/switchover", body: `{"node":"c-2"}`, want: 409},
		{name: "should refuse a switchover to the primary", method: "POST", path: "/v1/cluster/actions/switchover", body: `{"node":"c-0"}`, want: 409},
		{name: "should switch over to any replica in sync", method: "POST", path: "/v1/cluster/actions/switchover", body: `{"node":"any"}`, want: 202, wantIn: `"action_uid": "any/console-`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user, pass := tt.user, tt.pass
			if user == "" && tt.want != 401 {
				user, pass = username, password
			}
			status, body := do(t, hc, tt.method, f.api.URL+tt.path, user, pass, tt.body, map[string]string{"Content-Type": "application/json"})
			if status != tt.want || !strings.Contains(body, tt.wantIn) {
				t.Errorf("%s %s: %d %s, want %d with %q", tt.method, tt.path, status, body, tt.want, tt.wantIn)
			}
			var e console.APIError
			if status >= 400 && (json.Unmarshal([]byte(body), &e) != nil || e.ErrorCode == "") {
				t.Errorf("%s %s: error %q is not {error_code, description}", tt.method, tt.path, body)
			}
		})
	}
	o := f.cluster(t)
	if !strings.HasPrefix(o.Annotations[redisv1alpha1.BackupNowAnnotation], "console-") || !strings.HasPrefix(o.Annotations[switchover.Annotation], "any/console-") {
		t.Errorf("annotations after the actions: %v", o.Annotations)
	}
}

// A backup through the REST API of a cluster without spec.backup is
// refused (409), and writes nothing.
func TestAPIRefusesABackupWithoutSpecBackup(t *testing.T) {
	f := newFixture(t, options{})
	status, body := do(t, f.api.Client(), http.MethodPost, f.api.URL+"/v1/bdbs/1/actions/backup", username, password, "", nil)
	if status != http.StatusConflict {
		t.Errorf("backup without spec.backup: %d %s, want 409", status, body)
	}
	if _, ok := f.cluster(t).Annotations[redisv1alpha1.BackupNowAnnotation]; ok {
		t.Error("a refused backup annotated the cluster")
	}
}
