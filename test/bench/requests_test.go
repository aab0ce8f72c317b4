package bench

import (
	"maps"
	"strings"
	"testing"
)

func TestParseAPIRequests(t *testing.T) {
	const metrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 990
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="UPDATE",version="v1"} 1500
apiserver_request_total{code="404",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 2000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 3
# HELP apiserver_requested_deprecated_apis Gauge of deprecated APIs that have been requested.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="",removed_release="",resource="",subresource="",version=""} 1
`
	got, err := parseAPIRequests(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	want := apiRequests{"APPLY deployments": 1000, "UPDATE deployments/status": 1500, "GET deployments": 2000, "GET ": 3}
	if !maps.Equal(got, want) {
		t.Errorf("parsed %v, want %v", got, want)
	}
	if got, err := parseAPIRequests(strings.NewReader("")); err != nil || len(got) != 0 {
		t.Errorf("no metrics: %v, %v; want none", got, err)
	}
}

func TestAPIRequestsSinceAndDifferences(t *testing.T) {
	before := apiRequests{"GET deployments": 10, "APPLY deployments": 5, "LIST pods": 1}
	after := apiRequests{"GET deployments": 2010, "APPLY deployments": 1005, "LIST pods": 1, "WATCH pods": 2}
	d := after.since(before)
	if want := (apiRequests{"GET deployments": 2000, "APPLY deployments": 1000, "WATCH pods": 2}); !maps.Equal(d, want) {
		t.Errorf("since: %v, want %v", d, want)
	}
	if d.total() != 3002 {
		t.Errorf("total %v, want 3002", d.total())
	}
	bare := apiRequests{"APPLY deployments": 1000, "PATCH appservices/status": 1000}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{8, "GET deployments 2000/0, PATCH appservices/status 0/1000, WATCH pods 2/0, APPLY deployments 1000/1000"},
		{2, "GET deployments 2000/0, PATCH appservices/status 0/1000"},
		{0, ""},
	} {
		if got := requestDifferences(d, bare, tc.n); got != tc.want {
			t.Errorf("differences, %d: %q, want %q", tc.n, got, tc.want)
		}
	}
}
