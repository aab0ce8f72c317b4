package status

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/switchover"
)

// Switchover sets the Switchover condition of a data service from the last
// request handled (True once it moved the primary or the leader, False with
// the outcome as reason otherwise); none before the first.
func Switchover(conds *[]metav1.Condition, last *switchover.Status, generation int64, now metav1.Time) {
	if last == nil {
		return
	}
	st := metav1.ConditionFalse
	if last.Outcome == switchover.Done {
		st = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: switchover.ConditionType, Status: st, Reason: last.Outcome,
		Message: fmt.Sprintf("%s=%s: %s", switchover.Annotation, last.Request, last.Message), ObservedGeneration: generation, LastTransitionTime: now})
}
