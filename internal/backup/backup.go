package backup

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/api/conditions"
	"github.com/app-operator/app-operator/internal/engine"
)

// DefaultSnapshotImage is the image of the snapshot tools when the
// operator is given none: the operator's own, which carries them.
const DefaultSnapshotImage = "app-operator:latest"

// Action is the action of the backups' events.
const Action = "Backup"

// Next is how long until the next backup is due, given when the last one
// started (zero when none has) and the interval between two (zero for a
// backup taken once): 0 when it is due now, never (-1) for a backup taken
// once that was.
func Next(last time.Time, interval time.Duration, now time.Time) time.Duration {
	switch {
	case last.IsZero():
		return 0
	case interval <= 0:
		return -1
	}
	return max(last.Add(interval).Sub(now), 0)
}

// Ended is the event of a backup that ended, with its note.
type Ended struct {
	engine.StepEvent
	Note string
}

// Started is the event of a backup Job started.
func Started() *engine.StepEvent {
	return &engine.StepEvent{Type: corev1.EventTypeNormal, Reason: conditions.EventBackupStarted, Action: Action}
}

// Succeeded is the event of a backup that stored what note says.
func Succeeded(note string) *Ended {
	return &Ended{engine.StepEvent{Type: corev1.EventTypeNormal, Reason: conditions.EventBackupSucceeded, Action: Action}, note}
}

// Failed is the event of a backup that failed, as note says.
func Failed(note string) *Ended {
	return &Ended{engine.StepEvent{Type: corev1.EventTypeWarning, Reason: conditions.EventBackupFailed, Action: Action}, note}
}
