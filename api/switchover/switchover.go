// Package switchover holds the request to move a data service's primary
// (a RedisEnterpriseCluster's) or leader (an EtcdCluster's) on demand, and
// the record of the last request handled. A request is an annotation, so
// that a GitOps tool may keep it applied: it is acted on once per value,
// the value handled being recorded in the status.
// +kubebuilder:object:generate=true
package switchover

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation, set on a RedisEnterpriseCluster or an EtcdCluster, asks the
// operator to move the primary (the leader) to the node (member) it names,
// or, set to Any, to the replica (member) furthest along of those in sync.
// The value may end with a slash and a request ID of the user's choice
// ("example-1/2"): a value already handled (status.lastSwitchover.request)
// is not acted on again, so asking twice for the same node takes a new ID.
const Annotation = "app-operator/switchover"

// Any asks for the best target the operator can find.
const Any = "any"

// ConditionType is the condition that reports the last request's outcome.
const ConditionType = "Switchover"

// The outcomes of a request, as status.lastSwitchover.outcome and the
// Switchover condition's reason give them.
const (
	// InProgress: the operator claimed the request and is moving the
	// primary (the leader).
	InProgress = "SwitchoverInProgress"
	// Done: the target is the primary (the leader).
	Done = "SwitchedOver"
	// Refused: the target cannot take over (see the message); nothing
	// was changed.
	Refused = "SwitchoverRefused"
	// Failed: the move was tried and did not happen (the target did not
	// catch up in time, the operator stopped during it); the primary (the
	// leader) is the one the message names.
	Failed = "SwitchoverFailed"
)

// Why a request is refused (Refusal.Why).
const (
	NotAMember     = "not a member"
	AlreadyPrimary = "already primary"
	NotHealthy     = "not healthy"
	NotInSync      = "not in sync"
	Behind         = "behind"
)

// Status is the last request the operator handled.
type Status struct {
	// Request is the annotation's value as handled.
	Request string `json:"request"`
	// Target is the node (member) the primary (the leader) was to move
	// to; the one chosen for "any".
	// +optional
	Target string `json:"target,omitempty"`
	// Outcome is SwitchoverInProgress, SwitchedOver, SwitchoverRefused or
	// SwitchoverFailed.
	Outcome string `json:"outcome"`
	// Message says what was done, or why not.
	// +optional
	Message string `json:"message,omitempty"`
	// Time is when the request was handled.
	// +optional
	Time metav1.Time `json:"time,omitempty"`
}

// Pending returns the request the annotations hold that last has not
// handled (last may be nil), and its target: "" when there is none.
func Pending(annotations map[string]string, last *Status) (request, target string) {
	v, ok := annotations[Annotation]
	v = strings.TrimSpace(v)
	if !ok || v == "" || (last != nil && last.Request == v) {
		return "", ""
	}
	target, _, _ = strings.Cut(v, "/")
	return v, strings.TrimSpace(target)
}

// Refusal is why a target cannot take over.
type Refusal struct {
	// Why is one of NotAMember, AlreadyPrimary, NotHealthy, NotInSync,
	// Behind.
	Why string
	// Detail adds what the operator saw.
	Detail string
}
