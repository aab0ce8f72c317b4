package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
	customv1 "github.com/app-operator/app-operator/api/custom/v1"
)

// MicroServiceDeployObserved is what the status of a MicroServiceDeploy is
// computed from.
type MicroServiceDeployObserved struct {
	// Deployment is the instance's Deployment; nil when missing.
	Deployment *appsv1.Deployment
	// Idle is spec.idle.
	Idle bool
	// URL is where the Ingress exposes the instance; empty when the
	// operator does not expose it.
	URL string
	// IngressApplied is whether the Ingress exists as the operator wants it.
	IngressApplied bool
	// ExposureReason and ExposureMessage explain the exposure decision;
	// ExposureReason is HostConflict when another instance holds the host.
	ExposureReason, ExposureMessage string
	// Quota is what the namespace's quota, named QuotaName, means to the
	// instance.
	Quota     QuotaState
	QuotaName string
}

// QuotaState is what the namespace's ResourceQuota means to one instance.
type QuotaState int

const (
	// QuotaMissing: the namespace has no quota of the operator's name yet.
	QuotaMissing QuotaState = iota
	// QuotaForeign: a quota of the operator's name exists that the
	// operator did not create; it is left alone.
	QuotaForeign
	// QuotaShort: the operator's quota does not leave room for the
	// instance yet.
	QuotaShort
	// QuotaCovers: the operator's quota leaves room for every pod of the
	// instance.
	QuotaCovers
)

// QuotaReasonOf is the reason of the QuotaReady condition in state s.
func QuotaReasonOf(s QuotaState) string {
	switch s {
	case QuotaForeign:
		return conditions.ReasonQuotaConflict
	case QuotaCovers:
		return conditions.ReasonQuotaApplied
	default:
		return conditions.ReasonQuotaPending
	}
}

// MicroServiceDeploy sets the status of a MicroServiceDeploy from what the
// pass observed and its failure (nil on success).
//
// Ready is True when every child is applied, the Deployment has rolled out
// at its size (zero when idle), and the namespace's quota leaves room for
// the instance. It does not wait for what only an Ingress controller or a
// metrics server provides (an Ingress address, HPA metrics); Exposed tells
// whether the instance is reachable from outside.
//
// A quota of the operator's name that someone else created is a failure
// (Ready False, Degraded True, reason QuotaConflict). So is a host that
// another instance holds (reason HostConflict, after QuotaConflict): the
// instance runs, but is not exposed as it asks to be. observedGeneration
// moves when the pass applied the children of this generation.
func MicroServiceDeploy(st *customv1.MicroServiceDeployStatus, generation int64, o MicroServiceDeployObserved, failure *conditions.Failure, now metav1.Time) {
	quota := quotaCondition(generation, o)
	effective := failure
	if effective == nil && quota.Reason == conditions.ReasonQuotaConflict {
		effective = &conditions.Failure{Reason: quota.Reason, Message: quota.Message}
	}
	if effective == nil && o.ExposureReason == conditions.ReasonHostConflict {
		effective = &conditions.Failure{Reason: o.ExposureReason, Message: o.ExposureMessage}
	}

	// Ready waits for the quota too.
	c := workloadConditions(observeRollout(o.Deployment), effective)
	if c.ready.Status == metav1.ConditionTrue && quota.Status != metav1.ConditionTrue {
		say(&c.ready, metav1.ConditionFalse, quota.Reason, quota.Message)
	}
	c.set(&st.Conditions, generation, now)
	for _, cond := range []metav1.Condition{quota, idleCondition(generation, o.Idle), exposedCondition(generation, o)} {
		cond.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	w := workloadOf(o.Deployment, c.ready.Status == metav1.ConditionTrue)

	st.Replicas = w.Replicas
	st.ReadyReplicas = w.ReadyReplicas
	st.AvailableReplicas = w.AvailableReplicas
	st.UpdatedReplicas = w.UpdatedReplicas
	st.UnavailableReplicas = w.UnavailableReplicas
	st.URL = ""
	if o.URL != "" && o.IngressApplied {
		st.URL = o.URL
	}
	if failure == nil {
		st.ObservedGeneration = generation
	}
}

func quotaCondition(generation int64, o MicroServiceDeployObserved) metav1.Condition {
	c := metav1.Condition{Type: conditions.QuotaReady, ObservedGeneration: generation, Status: metav1.ConditionFalse, Reason: QuotaReasonOf(o.Quota)}
	switch o.Quota {
	case QuotaMissing:
		c.Message = fmt.Sprintf("Waiting for ResourceQuota %s to be created", o.QuotaName)
	case QuotaForeign:
		c.Message = fmt.Sprintf(
			"ResourceQuota %s already exists and was not created by the operator; the operator leaves it alone, so it does not count this instance", o.QuotaName)
	case QuotaShort:
		c.Message = fmt.Sprintf("Waiting for ResourceQuota %s to leave room for this instance", o.QuotaName)
	default:
		c.Status, c.Message = metav1.ConditionTrue, fmt.Sprintf("ResourceQuota %s leaves room for every pod of this instance", o.QuotaName)
	}
	return c
}

func idleCondition(generation int64, idle bool) metav1.Condition {
	if idle {
		return metav1.Condition{Type: conditions.Idle, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: conditions.ReasonParked, Message: "spec.idle is true: the instance runs no pods and no HPA; its Service and configuration stay"}
	}
	return metav1.Condition{Type: conditions.Idle, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason: conditions.ReasonActive, Message: "The instance runs as its spec says"}
}

func exposedCondition(generation int64, o MicroServiceDeployObserved) metav1.Condition {
	c := metav1.Condition{Type: conditions.Exposed, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason: o.ExposureReason, Message: o.ExposureMessage}
	switch {
	case o.URL == "":
	case o.IngressApplied:
		c.Status = metav1.ConditionTrue
	default:
		c.Reason, c.Message = conditions.ReasonRolloutInProgress, "Waiting for the Ingress to be applied"
	}
	return c
}
