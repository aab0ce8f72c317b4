package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/app-operator/app-operator/api/conditions"
)

// pausedPass is the whole pass of a resource that carries
// conditions.PausedAnnotation: it reads nothing beyond the resource, acts
// on nothing, and writes only the status. Progressing says the resource is
// paused; Ready and Degraded, and the status's observedGeneration, stay as
// the last pass before the pause left them, so that a spec changed while
// paused is never reported as observed.
func (r *Reconciler[T]) pausedPass(ctx context.Context, obj T) error {
	before := obj.DeepCopyObject().(T)
	conds := append([]metav1.Condition(nil), obj.GetConditions()...)
	now := metav1.NewTime(r.clock.Now())
	message := pausedMessage(obj)
	meta.SetStatusCondition(&conds, metav1.Condition{
		Type: conditions.Progressing, Status: metav1.ConditionFalse, Reason: conditions.ReasonPaused,
		Message: message, ObservedGeneration: obj.GetGeneration(), LastTransitionTime: now,
	})
	if meta.FindStatusCondition(conds, conditions.Ready) == nil {
		// Paused before its first pass: nothing it asks for exists, and
		// nothing may say it is ready.
		meta.SetStatusCondition(&conds, metav1.Condition{
			Type: conditions.Ready, Status: metav1.ConditionFalse, Reason: conditions.ReasonPaused,
			Message: message, ObservedGeneration: obj.GetGeneration(), LastTransitionTime: now,
		})
	}
	obj.SetConditions(conds)
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	r.statusWrites.Record(obj)
	if !wasPaused(before) {
		r.recorder.Eventf(obj, nil, corev1.EventTypeNormal, conditions.EventPaused, "Pause", "%s", message)
	}
	return nil
}

// pausedMessage says why nothing is done, and whether a spec waits.
func pausedMessage(obj Object) string {
	message := fmt.Sprintf("The %s annotation is set: the operator takes no action on this resource or its children until it is removed", conditions.PausedAnnotation)
	if ready := meta.FindStatusCondition(obj.GetConditions(), conditions.Ready); ready != nil && ready.Reason != conditions.ReasonPaused && ready.ObservedGeneration < obj.GetGeneration() {
		message += fmt.Sprintf("; generation %d of the spec is not applied, and Ready and Degraded are as of generation %d", obj.GetGeneration(), ready.ObservedGeneration)
	}
	return message
}

// wasPaused reports whether obj's status says a paused pass wrote it last.
func wasPaused(obj Object) bool {
	c := meta.FindStatusCondition(obj.GetConditions(), conditions.Progressing)
	return c != nil && c.Reason == conditions.ReasonPaused
}

// recordResumed emits the Resumed event for a status that a paused pass
// wrote and that a pass acting again has replaced.
func (r *Reconciler[T]) recordResumed(before, after T) {
	if wasPaused(before) && !wasPaused(after) {
		r.recorder.Eventf(after, nil, corev1.EventTypeNormal, conditions.EventResumed, "Resume",
			"The %s annotation is removed: the operator acts on this resource again", conditions.PausedAnnotation)
	}
}

// annotationsChanged lets through an update that changes one of the
// annotations keys (Kind.WakeOn).
func annotationsChanged(keys []string) predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, after := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
		for _, k := range keys {
			if before[k] != after[k] {
				return true
			}
		}
		return false
	}}
}

// pauseChanged lets through an update that sets or removes the pause: it
// changes no generation, and the pass must see it.
func pauseChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return conditions.IsPaused(e.ObjectOld.GetAnnotations()) != conditions.IsPaused(e.ObjectNew.GetAnnotations())
	}}
}
