package v1alpha1

import (
	"testing"
	"time"
)

func TestBackupEvery(t *testing.T) {
	for interval, want := range map[int32]time.Duration{0: 24 * time.Hour, -5: 24 * time.Hour, 60: time.Minute, 3600: time.Hour} {
		if got := (&Backup{Interval: interval}).Every(); got != want {
			t.Errorf("Every() of interval %d = %s, want %s", interval, got, want)
		}
	}
}
