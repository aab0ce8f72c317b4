package podhealth

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

// ReadinessFailure is why a workload's pods run but do not serve: the first
// pod, by name, with a container that has been running and not ready for
// longer than its readiness probe gives a container to pass
// (initialDelaySeconds + failureThreshold × periodSeconds + timeoutSeconds);
// nil when none has. The kubelet writes nothing while a probe keeps
// failing, so no event says when that time is up: recheck is how long
// until the first container still within its time would be a failure (0
// when none is). The message names the probe and when the container last
// started or was last ready, nothing that changes while the failure lasts.
func ReadinessFailure(now time.Time, pods ...*corev1.Pod) (f *conditions.Failure, recheck time.Duration) {
	sorted := slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range sorted {
		for _, u := range unready(p) {
			due := u.since.Add(u.grace)
			if !now.Before(due) {
				if f == nil {
					f = &conditions.Failure{Reason: conditions.ReasonReadinessProbeFailed, Message: fmt.Sprintf(
						"Pod %s: container %s has not passed its readiness probe (%s) since %s",
						p.Name, u.container, describeProbe(u.probe), u.since.UTC().Format(time.RFC3339))}
				}
				continue
			}
			if wait := due.Sub(now); recheck == 0 || wait < recheck {
				recheck = wait
			}
		}
	}
	if f != nil {
		recheck = 0
	}
	return f, recheck
}

// UnreadyContainers names, for a pod, each container that is running and
// not ready, with the time it has been so since: what ReadinessFailure
// looks at. It changes only when a container starts, becomes ready or stops
// being ready.
func UnreadyContainers(p *corev1.Pod) []string {
	us := unready(p)
	if len(us) == 0 {
		return nil
	}
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.container+"@"+u.since.UTC().Format(time.RFC3339))
	}
	return out
}

type unreadyContainer struct {
	container string
	probe     *corev1.Probe
	since     time.Time
	grace     time.Duration
}

// unready lists p's running containers that have a readiness probe, have
// started (passed any startup probe) and are not ready, in the pod spec's
// order.
func unready(p *corev1.Pod) []unreadyContainer {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return nil
	}
	// A container that was ready and is not any more has been so since the
	// pod's Ready condition last changed.
	var readyChanged time.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			readyChanged = c.LastTransitionTime.Time
		}
	}
	var out []unreadyContainer
	for _, c := range p.Spec.Containers {
		if c.ReadinessProbe == nil {
			continue
		}
		i := slices.IndexFunc(p.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == c.Name })
		if i < 0 {
			continue
		}
		cs := p.Status.ContainerStatuses[i]
		if cs.Ready || cs.State.Running == nil || (cs.Started != nil && !*cs.Started) {
			continue
		}
		since := cs.State.Running.StartedAt.Time
		if readyChanged.After(since) {
			since = readyChanged
		}
		out = append(out, unreadyContainer{container: c.Name, probe: c.ReadinessProbe, since: since, grace: probeGrace(c.ReadinessProbe)})
	}
	return out
}

// probeGrace is how long a probe takes to fail failureThreshold times in a
// row from the container's start, with the API server's defaults for the
// fields left unset.
func probeGrace(p *corev1.Probe) time.Duration {
	period, threshold, timeout := cmp.Or(p.PeriodSeconds, 10), cmp.Or(p.FailureThreshold, 3), cmp.Or(p.TimeoutSeconds, 1)
	return time.Duration(p.InitialDelaySeconds+threshold*period+timeout) * time.Second
}

// describeProbe says what a probe checks, as kubectl describe does.
func describeProbe(p *corev1.Probe) string {
	switch {
	case p.HTTPGet != nil:
		return fmt.Sprintf("%s GET %s on port %s", cmp.Or(p.HTTPGet.Scheme, corev1.URISchemeHTTP), cmp.Or(p.HTTPGet.Path, "/"), p.HTTPGet.Port.String())
	case p.TCPSocket != nil:
		return "TCP connect to port " + p.TCPSocket.Port.String()
	case p.GRPC != nil:
		return fmt.Sprintf("gRPC health check on port %d", p.GRPC.Port)
	case p.Exec != nil:
		return "exec " + strings.Join(p.Exec.Command, " ")
	}
	return "probe"
}
