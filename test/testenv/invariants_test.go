package testenv

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "github.com/app-operator/app-operator/api/app/v1"
)

func TestStatusInvariants(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: "R"}
	}
	for _, tc := range []struct {
		name       string
		generation int64
		observed   int64
		conds      []metav1.Condition
		want       string // substring of the error; empty: no error
	}{
		{"should accept a converged status", 2, 2, []metav1.Condition{cond("Ready", "True", 2), cond("Progressing", "False", 2)}, ""},
		{"should accept a status one generation behind", 3, 2, []metav1.Condition{cond("Ready", "True", 2)}, ""},
		{"should accept Ready=False", 1, 1, []metav1.Condition{cond("Ready", "False", 1)}, ""},
		{"should want a Ready condition", 1, 1, []metav1.Condition{cond("Progressing", "True", 1)}, "no Ready condition"},
		{"should refuse an observedGeneration above the generation", 1, 2, []metav1.Condition{cond("Ready", "False", 1)}, "status.observedGeneration 2 is above"},
		{"should want observedGeneration on every condition", 1, 1, []metav1.Condition{cond("Ready", "False", 1), cond("Degraded", "False", 0)}, "condition Degraded carries no observedGeneration"},
		{"should refuse a condition ahead of the generation", 1, 1, []metav1.Condition{cond("Ready", "False", 2)}, "above the generation"},
		{"should refuse Ready=True for another generation than the status", 3, 2, []metav1.Condition{cond("Ready", "True", 3)}, "Ready=True for generation 3"},
		{"should accept no status.observedGeneration before a pass succeeded", 1, 0, []metav1.Condition{cond("Ready", "False", 1)}, ""},
		{"should refuse Ready=True without status.observedGeneration", 1, 0, []metav1.Condition{cond("Ready", "True", 1)}, "while status.observedGeneration is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: tc.generation}}
			obj.Status.ObservedGeneration = tc.observed
			obj.Status.Conditions = tc.conds
			err := StatusInvariants(obj)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want no error, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}
