package engine

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/clock"

	"github.com/app-operator/app-operator/internal/applyschema"
)

// Options configure the engine. The zero value is valid: every field left
// zero takes its default.
type Options struct {
	// Clock stamps condition transitions; the real clock when nil.
	Clock clock.PassiveClock
	// Recheck is how often a resource blocked by something the operator
	// does not watch looks again; DefaultRecheck when zero.
	Recheck time.Duration
	// Settle is how long a status write waits for a silent Deployment
	// controller (see rolloutWait); DefaultSettle when zero.
	Settle time.Duration
	// MaxConcurrentReconciles is how many resources of one kind are
	// reconciled at once; 1 when zero.
	MaxConcurrentReconciles int
	// StatefulReconciles is how many resources of one data-service kind
	// (a kind with Phases) are reconciled at once;
	// DefaultStatefulReconciles when zero, and never fewer than
	// MaxConcurrentReconciles.
	StatefulReconciles int
}

// DefaultStatefulReconciles is how many resources of one data-service kind
// are reconciled at once by default. Their passes wait on the network,
// not on the CPU: a pass that asks a silent member waits out its dial and
// call timeouts (about a second each), and a failover asks the silent
// primary again before it promotes. With few workers, clusters whose
// primaries fail together queue behind one another's timeouts and fail
// over windows late; with a worker each, the last fails over as soon as
// the first. A worker is a goroutine that waits: idle, it costs nothing.
const DefaultStatefulReconciles = 64

// DefaultRecheck is how often a resource blocked by something the operator
// does not watch looks again: a child it does not control, or an admission
// check (a webhook, a ValidatingAdmissionPolicy) that refused a child.
const DefaultRecheck = time.Minute

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Recheck <= 0 {
		o.Recheck = DefaultRecheck
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	o.MaxConcurrentReconciles = max(o.MaxConcurrentReconciles, 1)
	if o.StatefulReconciles <= 0 {
		o.StatefulReconciles = DefaultStatefulReconciles
	}
	o.StatefulReconciles = max(o.StatefulReconciles, o.MaxConcurrentReconciles)
	return o
}

// Env is what the controllers of every kind share: the options with their
// defaults, and the converter of objects to typed field sets that apply
// comparisons use (internal/applyschema).
type Env struct {
	Options Options
	// Types converts objects to typed field sets.
	Types managedfields.TypeConverter
}

// NewEnv returns the engine's shared settings for the types of scheme.
func NewEnv(scheme *runtime.Scheme, opts Options) *Env {
	return &Env{Options: opts.WithDefaults(), Types: applyschema.TypeConverter(scheme)}
}
