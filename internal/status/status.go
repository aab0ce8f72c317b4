// Package status turns what the operator observed into status and
// conditions. It is pure: the caller passes the clock's reading in.
package status

import (
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

// The messages of Progressing=False after a rollout, and of Degraded=False,
// the same for every kind.
const (
	messageRolloutComplete = "The last change has rolled out"
	messageAsExpected      = "Nothing is wrong"
)

// rolloutPhase classifies a Deployment the way `kubectl rollout status` does.
type rolloutPhase int

const (
	phaseMissing rolloutPhase = iota
	phaseProgressing
	phaseStalled
	phaseAvailable
)

type rollout struct {
	phase   rolloutPhase
	reason  string
	message string
}

// observeRollout reads the state of a Deployment's rollout from its status.
func observeRollout(d *appsv1.Deployment) rollout {
	if d == nil {
		return rollout{phaseMissing, conditions.ReasonRolloutInProgress, "Waiting for the Deployment to be created"}
	}
	if d.Status.ObservedGeneration < d.Generation {
		return rollout{phaseProgressing, conditions.ReasonRolloutInProgress, "Waiting for the Deployment controller to observe the new spec"}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return rollout{phaseStalled, conditions.ReasonProgressDeadlineExceeded, fmt.Sprintf("Deployment %s exceeded its progress deadline", d.Name)}
		}
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return rollout{phaseStalled, conditions.ReasonReplicaFailure, fmt.Sprintf("Deployment %s cannot create pods: %s", d.Name, stableMessage(c.Message))}
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.UpdatedReplicas < want:
		return rollout{phaseProgressing, conditions.ReasonRolloutInProgress, fmt.Sprintf("%d of %d pods updated", s.UpdatedReplicas, want)}
	case s.Replicas > s.UpdatedReplicas:
		return rollout{phaseProgressing, conditions.ReasonRolloutInProgress, fmt.Sprintf("%d old pods pending termination", s.Replicas-s.UpdatedReplicas)}
	case s.AvailableReplicas < s.UpdatedReplicas:
		return rollout{phaseProgressing, conditions.ReasonRolloutInProgress, fmt.Sprintf("%d of %d updated pods available", s.AvailableReplicas, s.UpdatedReplicas)}
	}
	return rollout{phaseAvailable, conditions.ReasonAvailable, fmt.Sprintf("%d of %d pods available", s.AvailableReplicas, want)}
}

var (
	// podName is the generated name of the pod a failure message is about.
	podName = regexp.MustCompile(`pods? "[^"]*" `)
	// quotaUsed is the usage a quota failure reports, which moves as pods
	// come and go.
	quotaUsed = regexp.MustCompile(`, used: .*?, limited: `)
)

// stableMessage drops from a failure message the values that differ from
// one attempt to the next (the generated name of the refused pod, the
// quota's current usage), so that a failure that persists writes the
// status once.
func stableMessage(msg string) string {
	msg = podName.ReplaceAllString(msg, "pods ")
	return quotaUsed.ReplaceAllString(msg, ", limited: ")
}

// workloadConditions is the triple of a Deployment-backed kind: what its
// rollout says, and the pass's failure (nil when it converged) over it.
func workloadConditions(r rollout, failure *conditions.Failure) triple {
	c := newTriple()
	switch r.phase {
	case phaseAvailable:
		c.available(r.message)
	case phaseStalled:
		c.stuck(&conditions.Failure{Reason: r.reason, Message: r.message})
	default:
		c.changing(r.reason, r.message)
	}
	if failure != nil {
		c.failed(failure)
	}
	return c
}

// Workload is the status every Deployment-backed kind reports.
type Workload struct {
	Replicas            int32
	ReadyReplicas       int32
	AvailableReplicas   int32
	UpdatedReplicas     int32
	UnavailableReplicas int32
	// Ready is whether the Ready condition is True.
	Ready bool
}

// SetWorkloadConditions sets Ready, Progressing and Degraded on conds from
// the Deployment d (nil when it does not exist) and the pass's failure (nil
// when it converged), and returns the replica counts. A condition's
// lastTransitionTime moves only when its status changes.
func SetWorkloadConditions(conds *[]metav1.Condition, generation int64, d *appsv1.Deployment, failure *conditions.Failure, now metav1.Time) Workload {
	c := workloadConditions(observeRollout(d), failure)
	c.set(conds, generation, now)
	return workloadOf(d, c.ready.Status == metav1.ConditionTrue)
}

// workloadOf returns the replica counts of d (nil: none).
func workloadOf(d *appsv1.Deployment, ready bool) Workload {
	w := Workload{Ready: ready}
	if d != nil {
		w.Replicas = d.Status.Replicas
		w.ReadyReplicas = d.Status.ReadyReplicas
		w.AvailableReplicas = d.Status.AvailableReplicas
		w.UpdatedReplicas = d.Status.UpdatedReplicas
		w.UnavailableReplicas = d.Status.UnavailableReplicas
	}
	return w
}
