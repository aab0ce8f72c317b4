package console

import (
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestServer(clock *fakeClock) *Server {
	return New(Config{Namespace: "ns", Cluster: "c", Now: clock.now, Log: logr.Discard()})
}

func TestLockout(t *testing.T) {
	tests := []struct {
		name string
		// steps: a failure of client "a" after the duration, or, for a
		// negative duration, a wait of its absolute value.
		steps []time.Duration
		want  bool
	}{
		{name: "should not lock out after four failures", steps: []time.Duration{0, 0, 0, 0}, want: false},
		{name: "should lock out at the fifth failure within ten minutes", steps: []time.Duration{0, time.Minute, time.Minute, time.Minute, 6 * time.Minute}, want: true},
		{name: "should not count a failure older than ten minutes", steps: []time.Duration{0, time.Minute, time.Minute, time.Minute, 7*time.Minute + time.Second}, want: false},
		{name: "should stay locked out for five minutes", steps: []time.Duration{0, 0, 0, 0, 0, -(Lockout - time.Second)}, want: true},
		{name: "should let the client try again after five minutes", steps: []time.Duration{0, 0, 0, 0, 0, -Lockout}, want: false},
		{name: "should count afresh after a lockout", steps: []time.Duration{0, 0, 0, 0, 0, -Lockout, 0}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0)}
			a := newTestServer(clock).auth
			for _, d := range tt.steps {
				if d < 0 {
					clock.advance(-d)
					continue
				}
				clock.advance(d)
				a.fail("a")
			}
			if got := a.lockedOut("a"); got != tt.want {
				t.Errorf("locked out: %v, want %v", got, tt.want)
			}
			if a.lockedOut("b") {
				t.Error("another client is locked out too")
			}
		})
	}
}

func TestSessionExpiry(t *testing.T) {
	tests := []struct {
		name string
		// uses are the waits before each use of the session.
		uses []time.Duration
		want bool
	}{
		{name: "should keep a session used within the idle TTL", uses: []time.Duration{29 * time.Minute, 29 * time.Minute}, want: true},
		{name: "should end a session idle for the TTL", uses: []time.Duration{DefaultSessionTTL}, want: false},
		{name: "should end a session eight hours after it started, used or not", uses: repeat(20*time.Minute, 24), want: false},
		{name: "should keep a session used for less than eight hours", uses: repeat(20*time.Minute, 23), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0)}
			a := newTestServer(clock).auth
			id, err := a.newSession("u")
			if err != nil {
				t.Fatal(err)
			}
			r, _ := http.NewRequest(http.MethodGet, "/", nil)
			r.AddCookie(&http.Cookie{Name: SessionCookie, Value: id})
			alive := true
			for _, d := range tt.uses {
				clock.advance(d)
				s, _ := a.session(r)
				alive = s != nil
			}
			if alive != tt.want {
				t.Errorf("session alive: %v, want %v", alive, tt.want)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
