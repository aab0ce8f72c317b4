package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

// triple is the Ready, Progressing and Degraded conditions of one pass,
// which every kind reports and sets together, so that no kind says one
// state in one condition and another in the next. It starts as "not
// ready, nothing changing, nothing wrong"; a kind's rule says which state
// the pass is in (available, changing, stuck, failed) and may adjust a
// condition where the kind says more.
type triple struct {
	ready, progressing, degraded metav1.Condition
}

func newTriple() triple {
	return triple{
		ready:       metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionFalse},
		progressing: metav1.Condition{Type: conditions.Progressing, Status: metav1.ConditionFalse},
		degraded: metav1.Condition{Type: conditions.Degraded, Status: metav1.ConditionFalse,
			Reason: conditions.ReasonAsExpected, Message: messageAsExpected},
	}
}

func say(c *metav1.Condition, status metav1.ConditionStatus, reason, message string) {
	c.Status, c.Reason, c.Message = status, reason, message
}

// available: Ready, the last change rolled out.
func (c *triple) available(message string) {
	say(&c.ready, metav1.ConditionTrue, conditions.ReasonAvailable, message)
	say(&c.progressing, metav1.ConditionFalse, conditions.ReasonRolloutComplete, messageRolloutComplete)
}

// changing: not Ready while a change is made, for reason.
func (c *triple) changing(reason, message string) {
	say(&c.ready, metav1.ConditionFalse, reason, message)
	say(&c.progressing, metav1.ConditionTrue, reason, message)
}

// failed: not Ready and Degraded for f; Progressing says what it said.
func (c *triple) failed(f *conditions.Failure) {
	say(&c.ready, metav1.ConditionFalse, f.Reason, f.Message)
	say(&c.degraded, metav1.ConditionTrue, f.Reason, f.Message)
}

// stuck: failed, and nothing moves until f is mended.
func (c *triple) stuck(f *conditions.Failure) {
	c.failed(f)
	say(&c.progressing, metav1.ConditionFalse, f.Reason, f.Message)
}

// set writes the three conditions to conds for generation. A condition's
// lastTransitionTime moves only when its status changes.
func (c triple) set(conds *[]metav1.Condition, generation int64, now metav1.Time) {
	for _, cond := range []metav1.Condition{c.ready, c.progressing, c.degraded} {
		cond.ObservedGeneration = generation
		cond.LastTransitionTime = now
		meta.SetStatusCondition(conds, cond)
	}
}
