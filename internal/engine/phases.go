package engine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Phases are the hooks of a data service: a kind whose convergence is a
// sequence of guarded steps against the application itself (an etcd member
// added, then promoted; a Redis primary elected). A pass runs them in this
// order, each at most once:
//
//  1. Prepare makes what must exist before anything is read (a password
//     Secret, issued certificates) and returns it: P. The only phase
//     before the apply that may write.
//  2. Observe reads the application and the cluster, and writes nothing:
//     O, the observation.
//  3. Build returns the children from the spec, P and O (the engine then
//     applies and prunes them). Pure.
//  4. Plan decides the next step from the spec, O and the children as
//     applied: D. Pure. With SafetySteps (a failure stopped the pass
//     before the children were all applied) it plans only a step that
//     keeps the data safe (a failover, a fence).
//  5. Act takes the planned step, with I/O only, and returns what it did
//     (R, as far as it got when it fails) and the Step the engine reports
//     and requeues by.
//  6. SetStatus computes the status from the pass's record. Pure.
//
// Each phase receives the record of those before it (a PassOf), which the
// engine keeps for the length of the pass: no phase writes into another's
// result.
type Phases[T Object, P, O, D, R any] struct {
	// Prepare is nil for a kind that has nothing to make first.
	Prepare func(ctx context.Context, c Clients, obj T) (P, error)
	Observe func(ctx context.Context, c Clients, obj T, prepared P) (O, error)
	// Build receives a zero record without a cluster (a preview).
	Build     func(obj T, pass *PassOf[P, O, D, R]) ([]runtime.ApplyConfiguration, error)
	Plan      func(obj T, pass *PassOf[P, O, D, R], applied Observed, scope Scope) D
	Act       func(ctx context.Context, c Clients, obj T, pass *PassOf[P, O, D, R]) (R, Step, error)
	SetStatus func(obj T, pass *PassOf[P, O, D, R], report Report, now metav1.Time)
}

// PassOf is what the phases of one pass returned, each set once its phase
// ran.
type PassOf[P, O, D, R any] struct {
	// Began: Prepared and Observed are set (false in a preview, which
	// reads nothing, and in a pass whose Prepare or Observe failed: its
	// status reports the failure).
	Began    bool
	Prepared P
	Observed O
	// Planned: Decision is set, and Act was called: Result is what it did,
	// as far as it got when it failed.
	Planned  bool
	Decision D
	Result   R
}

// With returns k driven by these phases: its Build (for a preview, from a
// zero record) and the passes the reconciler runs.
func (ph Phases[T, P, O, D, R]) With(k Kind[T]) Kind[T] {
	k.Build = func(obj T, _ Observed) ([]runtime.ApplyConfiguration, error) {
		return ph.Build(obj, &PassOf[P, O, D, R]{})
	}
	k.phases = ph
	return k
}

// begin prepares and observes obj: the start of a pass. On an error it
// returns the pass too, not Began, for its status.
func (ph Phases[T, P, O, D, R]) begin(ctx context.Context, c Clients, obj T) (dataPass[T], error) {
	pass := &phasePass[T, P, O, D, R]{ph: ph}
	rec := &pass.record
	if ph.Prepare != nil {
		p, err := ph.Prepare(ctx, c, obj)
		if err != nil {
			return pass, err
		}
		rec.Prepared = p
	}
	o, err := ph.Observe(ctx, c, obj, rec.Prepared)
	if err != nil {
		return pass, err
	}
	rec.Observed, rec.Began = o, true
	return pass, nil
}

// phases is the part of Phases the reconciler drives, whatever its types.
type phases[T Object] interface {
	begin(ctx context.Context, c Clients, obj T) (dataPass[T], error)
}

// dataPass is one pass of a data service, once it has observed.
type dataPass[T Object] interface {
	build(obj T) ([]runtime.ApplyConfiguration, error)
	step(ctx context.Context, c Clients, obj T, applied Observed, scope Scope) (Step, error)
	setStatus(obj T, report Report, now metav1.Time)
}

// phasePass holds a pass's record between the phases.
type phasePass[T Object, P, O, D, R any] struct {
	ph     Phases[T, P, O, D, R]
	record PassOf[P, O, D, R]
}

func (p *phasePass[T, P, O, D, R]) build(obj T) ([]runtime.ApplyConfiguration, error) {
	return p.ph.Build(obj, &p.record)
}

func (p *phasePass[T, P, O, D, R]) step(ctx context.Context, c Clients, obj T, applied Observed, scope Scope) (Step, error) {
	p.record.Decision = p.ph.Plan(obj, &p.record, applied, scope)
	p.record.Planned = true
	r, s, err := p.ph.Act(ctx, c, obj, &p.record)
	p.record.Result = r
	if err != nil {
		return Step{}, err
	}
	return s, nil
}

func (p *phasePass[T, P, O, D, R]) setStatus(obj T, report Report, now metav1.Time) {
	p.ph.SetStatus(obj, &p.record, report, now)
}
