package microservicedeploy

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
	"github.com/app-operator/app-operator/internal/resources"
)

func TestHostHolder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	claimant := func(ns, name string, created time.Time) Claimant {
		return Claimant{Namespace: ns, Name: name, Created: created}
	}
	deleting := func(c Claimant) Claimant { c.Deleting = true; return c }
	tests := []struct {
		name       string
		self       Claimant
		candidates []Claimant
		want       Claimant
	}{
		{"should hold a host nobody else wants", claimant("a", "x", t1), nil, claimant("a", "x", t1)},
		{"should hold a host when the candidates are only itself", claimant("a", "x", t1),
			[]Claimant{claimant("a", "x", t1)}, claimant("a", "x", t1)},
		{"should hold a host against a younger instance of another namespace", claimant("b", "x", t0),
			[]Claimant{claimant("b", "x", t0), claimant("a", "x", t1)}, claimant("b", "x", t0)},
		{"should lose a host to an older instance of another namespace", claimant("a", "x", t1),
			[]Claimant{claimant("a", "x", t1), claimant("b", "x", t0)}, claimant("b", "x", t0)},
		{"should give the host to the oldest of several", claimant("c", "x", t1.Add(time.Second)),
			[]Claimant{claimant("a", "x", t1), claimant("b", "y", t0), claimant("c", "x", t1.Add(time.Second))}, claimant("b", "y", t0)},
		{"should break a tie by namespace", claimant("b", "a", t0),
			[]Claimant{claimant("a", "z", t0)}, claimant("a", "z", t0)},
		{"should break a tie in one namespace by name", claimant("a", "y", t0),
			[]Claimant{claimant("a", "x", t0)}, claimant("a", "x", t0)},
		{"should not lose a host to an older instance being deleted", claimant("a", "x", t1),
			[]Claimant{deleting(claimant("b", "x", t0))}, claimant("a", "x", t1)},
		{"should lose a host held by no one else when being deleted", deleting(claimant("a", "x", t0)),
			[]Claimant{claimant("b", "x", t1)}, claimant("b", "x", t1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, HostHolder(tt.self, tt.candidates)); diff != "" {
				t.Errorf("holder (-want +got):\n%s", diff)
			}
		})
	}
}

// The decision is the same whichever instance makes it and in whatever
// order the cache lists the others, so two instances never both hold a host.
func TestHostHolderIsTheSameForEveryClaimant(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []Claimant{
		{Namespace: "b", Name: "x", Created: t0},
		{Namespace: "a", Name: "y", Created: t0.Add(time.Second)},
		{Namespace: "a", Name: "x", Created: t0},
		{Namespace: "c", Name: "x", Created: t0, Deleting: true},
	}
	want := all[2]
	for _, self := range all[:3] {
		for i := range all {
			// Rotate the candidates.
			cands := append(append([]Claimant(nil), all[i:]...), all[:i]...)
			if got := HostHolder(self, cands); got != want {
				t.Errorf("for %s with candidates %v the holder is %s, want %s", self, cands, got, want)
			}
		}
	}
}

func TestBuildWithoutTheHost(t *testing.T) {
	opts := Options{BaseDomain: "apps.example.com"}
	tests := []struct {
		name       string
		spec       customv1.MicroServiceDeploySpec
		holder     string
		wantReason string
		wantHost   string
	}{
		{"should expose an instance that holds its host",
			with(func(s *customv1.MicroServiceDeploySpec) { s.NeedAuth = false }), "",
			conditions.ReasonIngressApplied, "ms-sample-v1.apps.example.com"},
		{"should not expose an instance whose host another one holds",
			with(func(s *customv1.MicroServiceDeploySpec) { s.NeedAuth = false }), "other/ms-sample-v1s0",
			conditions.ReasonHostConflict, ""},
		{"should want the same host for a-b/c as for a/b-c, and lose it the same way",
			with(func(s *customv1.MicroServiceDeploySpec) { s.NeedAuth, s.MsName, s.Path = false, "ms", "sample-v1" }), "other/ms-sample-v1s0",
			conditions.ReasonHostConflict, ""},
		{"should keep the reason of an instance that wants no host",
			sample(), "other/ms-sample-v1s0",
			conditions.ReasonAuthUnavailable, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wanted := Expose(&tt.spec, opts).Host
			c := Build(owner("ms-sample-v1s0"), &tt.spec, opts, resources.Defaults{}, tt.holder)
			if c.Exposure.Reason != tt.wantReason || c.Exposure.Host != tt.wantHost {
				t.Fatalf("exposure = %+v, want reason %s host %q", c.Exposure, tt.wantReason, tt.wantHost)
			}
			if (c.Ingress != nil) != (tt.wantHost != "") {
				t.Errorf("Ingress built: %v, want %v", c.Ingress != nil, tt.wantHost != "")
			}
			if tt.wantReason != conditions.ReasonHostConflict {
				return
			}
			if wanted != "ms-sample-v1.apps.example.com" {
				t.Errorf("wanted host %q, want ms-sample-v1.apps.example.com", wanted)
			}
			if c.Exposure.URL != "" || !strings.Contains(c.Exposure.Message, wanted) || !strings.Contains(c.Exposure.Message, tt.holder) {
				t.Errorf("exposure = %+v: want no URL and a message naming the host and %s", c.Exposure, tt.holder)
			}
		})
	}
}
