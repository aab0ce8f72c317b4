package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventuallyInNamespace is Eventually for a test on real pods: when the
// condition is not met, the failure also says what the pods of namespace
// ns were and the last warnings there, so that a failure on a busy machine
// says whether the members were down or only the status was wrong.
func EventuallyInNamespace(t testing.TB, c client.Reader, ns string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	if last, err := poll(timeout, cond); err != nil {
		t.Fatalf("condition not met within %s: %s\n%s", timeout, last, NamespaceState(c, ns))
	}
}

// warningsShown is how many of a namespace's last warnings NamespaceState
// shows.
const warningsShown = 10

// NamespaceState describes the pods of ns (phase, readiness, restarts,
// deletion) and its last warning events, one line each.
func NamespaceState(c client.Reader, ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "pods of %s: %v\n", ns, err)
	}
	for _, p := range pods.Items {
		ready, restarts := "not ready", int32(0)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = "ready"
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = fmt.Sprintf(", deleted at %s", p.DeletionTimestamp.Format(time.TimeOnly))
		}
		fmt.Fprintf(&b, "pod %s (uid %s, node %s, ip %s): %s, %s, %d restarts%s\n",
			p.Name, p.UID, p.Spec.NodeName, p.Status.PodIP, p.Status.Phase, ready, restarts, deleting)
	}
	events := &eventsv1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "events of %s: %v\n", ns, err)
	}
	warnings := slices.DeleteFunc(events.Items, func(e eventsv1.Event) bool { return e.Type != corev1.EventTypeWarning })
	slices.SortFunc(warnings, func(a, b eventsv1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	if len(warnings) > warningsShown {
		warnings = warnings[len(warnings)-warningsShown:]
	}
	for _, e := range warnings {
		fmt.Fprintf(&b, "warning at %s on %s %s: %s: %s\n", eventTime(e).Format(time.TimeOnly), e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
	}
	return strings.TrimRight(b.String(), "\n")
}

// eventTime is when e last happened.
func eventTime(e eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
