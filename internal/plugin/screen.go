// Package plugin is the kubectl plugin's work: `kubectl app-operator
// status` gathers what an engineer on call looks at first (the resource's
// conditions, its members and their roles, its certificates, its backups,
// its last events) into a Screen, which Render draws in 100 columns; the
// other commands write the resource (an annotation), so that the operator
// stays the one that acts.
package plugin

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Width is the width of a rendered screen, in columns.
const Width = 100

// Screen is what status shows of one resource, gathered from the cluster
// (see Gather) and drawn by Render.
type Screen struct {
	Kind, Namespace, Name string
	Created               time.Time
	Generation            int64
	// ObservedGeneration is the generation the status reflects.
	ObservedGeneration int64
	// Paused is whether the pause annotation stops the operator's actions.
	Paused bool
	// Summary are the kind's own facts, one line each (the primary, the
	// leader, the version...).
	Summary []Field
	// Conditions are status.conditions.
	Conditions []metav1.Condition
	// Members are the data service's members, with their pods; nil for
	// the other kinds.
	Members *Table
	// Changes are a Redis cluster's last changes of its primary, newest
	// first (at most lastChanges).
	Changes []Change
	// Certificates are the TLS certificates the resource uses.
	Certificates []Certificate
	// Backups are lines about the last and next backups.
	Backups []Field
	// Events are the resource's last events, newest last.
	Events []Event
}

// Change is one change of the primary: when, from which node to which,
// and why (Failover, Switchover, Handover).
type Change struct {
	Time             time.Time
	From, To, Reason string
}

// Field is one fact: a label and its value.
type Field struct{ Label, Value string }

// Table is a table with a header row.
type Table struct {
	Header []string
	Rows   [][]string
}

// Certificate is one certificate in a Secret, or why it cannot be read.
type Certificate struct {
	Secret   string
	NotAfter time.Time
	Subject  string
	// Problem says why the certificate could not be read (no access, no
	// such Secret); empty when it was.
	Problem string
}

// Event is one event of the resource.
type Event struct {
	Last    time.Time
	Type    string
	Reason  string
	Message string
	Count   int32
}
