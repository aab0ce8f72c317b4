// Package podhealth says what keeps a workload's pods from running or from
// being ready, as the scheduler and the kubelet report it.
package podhealth

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

// Failure is why a workload's pods cannot run, as the scheduler and the
// kubelet report it: the failure of the first pod, by name, that has one;
// nil when none has. It sees within seconds what a Deployment reports only
// at its progress deadline. Its message holds nothing that changes while
// the failure lasts (no restart count, no back-off time), so a failure that
// persists writes the status once.
func Failure(pods ...*corev1.Pod) *conditions.Failure {
	sorted := slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		if f := podFailure(p); f != nil {
			return f
		}
	}
	return nil
}

// Waiting reasons the kubelet gives a container whose image it cannot pull,
// and one it cannot create or start.
var (
	imagePullReasons   = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable"}
	cannotStartReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
)

// Unschedulable returns p's PodScheduled condition when the scheduler has
// tried p and found no node for it; nil otherwise.
func Unschedulable(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podFailure(p *corev1.Pod) *conditions.Failure {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	if c := Unschedulable(p); c != nil {
		return &conditions.Failure{Reason: conditions.ReasonPodUnschedulable, Message: fmt.Sprintf("Pod %s cannot be scheduled: %s", p.Name, c.Message)}
	}
	for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if f := containerFailure(p, cs); f != nil {
			return f
		}
	}
	return nil
}

func containerFailure(p *corev1.Pod, cs corev1.ContainerStatus) *conditions.Failure {
	waiting := ""
	if w := cs.State.Waiting; w != nil {
		waiting = w.Reason
		switch {
		case slices.Contains(imagePullReasons, w.Reason):
			return &conditions.Failure{Reason: conditions.ReasonImagePullFailed, Message: fmt.Sprintf("Pod %s: container %s cannot pull image %q", p.Name, cs.Name, imageOf(p, cs))}
		case slices.Contains(cannotStartReasons, w.Reason):
			return &conditions.Failure{Reason: conditions.ReasonContainerCannotStart, Message: fmt.Sprintf("Pod %s: container %s cannot start: %s", p.Name, cs.Name, w.Message)}
		}
	}
	// A container that keeps exiting is waiting to be restarted, or running
	// again but not ready; once ready, it is well again.
	last := cs.LastTerminationState.Terminated
	crashing := waiting == "CrashLoopBackOff" || (cs.State.Running != nil && !cs.Ready && last != nil && last.ExitCode != 0)
	if !crashing {
		return nil
	}
	msg := fmt.Sprintf("Pod %s: container %s keeps exiting", p.Name, cs.Name)
	if last != nil {
		msg += fmt.Sprintf(": last exit code %d", last.ExitCode)
		if last.Reason != "" {
			msg += " (" + last.Reason + ")"
		}
	}
	return &conditions.Failure{Reason: conditions.ReasonCrashLoopBackOff, Message: msg}
}

// imageOf is the image a container status is about: the pod spec's, which
// is what the user wrote.
func imageOf(p *corev1.Pod, cs corev1.ContainerStatus) string {
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		if c.Name == cs.Name {
			return c.Image
		}
	}
	return cs.Image
}
