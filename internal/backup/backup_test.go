package backup

import (
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		last     time.Time
		interval time.Duration
		want     time.Duration
	}{
		{"none yet, periodic", time.Time{}, time.Hour, 0},
		{"none yet, once", time.Time{}, 0, 0},
		{"taken once", now.Add(-time.Minute), 0, -1},
		{"within the interval", now.Add(-20 * time.Minute), time.Hour, 40 * time.Minute},
		{"interval just passed", now.Add(-time.Hour), time.Hour, 0},
		{"interval long passed", now.Add(-5 * time.Hour), time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(tc.last, tc.interval, now); got != tc.want {
				t.Errorf("Next = %s, want %s", got, tc.want)
			}
		})
	}
}
