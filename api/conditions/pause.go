package conditions

// PausedAnnotation, set on a resource of any app-operator kind, stops the
// operator from acting on it or its children until it is removed (or set
// to "false"): nothing is applied, pruned, deleted or run against the
// application, and only the status is written, to say so.
const PausedAnnotation = "app-operator/paused"

const (
	// ReasonPaused: the resource carries PausedAnnotation; the operator
	// takes no action on it.
	ReasonPaused = "Paused"
	// EventPaused and EventResumed: the operator stopped acting on a
	// resource because of PausedAnnotation, and started again once it was
	// removed.
	EventPaused  = "Paused"
	EventResumed = "Resumed"
)

// IsPaused reports whether annotations pause their resource: the
// annotation is set, to anything but "false".
func IsPaused(annotations map[string]string) bool {
	v, ok := annotations[PausedAnnotation]
	return ok && v != "false"
}
