package controller

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// stepKind is the hooks of a step-wise kind with its look typed: look
// reads the application once a pass, before the build (the members an
// etcd cluster has, the Secret a Redis cluster's nodes share), and build,
// step and setStatus receive what it read as an *L. with fills a kind's
// hooks from them; the engine carries the look among the objects the pass
// read without knowing its type.
type stepKind[T object, L any] struct {
	// look reads what build and step need of the application and of the
	// cluster, with the reconciler's client.
	look func(ctx context.Context, c clients, obj T) (L, error)
	// build is kind.build; look is nil without a cluster (a preview).
	build func(obj T, look *L) ([]runtime.ApplyConfiguration, error)
	// step is kind.step, with this pass's look.
	step func(ctx context.Context, c clients, obj T, look *L, children observed, scope stepScope) (Step, error)
	// setStatus is kind.setStatus; look is nil when the pass stopped
	// before it looked.
	setStatus func(obj T, look *L, pass report, now metav1.Time)
}

// lookKey is where a pass's look travels among the objects it read.
const lookKey = "Look/"

// carried is a look as one of the objects a pass read.
type carried[L any] struct {
	metav1.PartialObjectMetadata
	look *L
}

func (c *carried[L]) DeepCopyObject() runtime.Object {
	cp := *c
	return &cp
}

// lookIn returns the look among in, or nil.
func lookIn[L any](in observed) *L {
	if c, ok := in[lookKey].(*carried[L]); ok {
		return c.look
	}
	return nil
}

// with returns k with its lookup, build, step and setStatus hooks made
// from s.
func (s stepKind[T, L]) with(k kind[T]) kind[T] {
	k.lookup = func(ctx context.Context, c clients, obj T, in observed) error {
		look, err := s.look(ctx, c, obj)
		if err != nil {
			return err
		}
		in[lookKey] = &carried[L]{look: &look}
		return nil
	}
	k.build = func(obj T, in observed) ([]runtime.ApplyConfiguration, error) {
		return s.build(obj, lookIn[L](in))
	}
	k.step = func(ctx context.Context, c clients, obj T, children observed, scope stepScope) (Step, error) {
		look := lookIn[L](children)
		if look == nil {
			return Step{}, errors.New("the application was not looked at before the step")
		}
		return s.step(ctx, c, obj, look, children, scope)
	}
	k.setStatus = func(obj T, pass report, now metav1.Time) {
		s.setStatus(obj, lookIn[L](pass.children), pass, now)
	}
	return k
}
