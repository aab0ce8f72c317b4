package podhealth

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/app-operator/app-operator/api/conditions"
)

func TestReadinessFailure(t *testing.T) {
	started := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	// The API server's defaults: period 10 s, 3 failures, timeout 1 s.
	httpProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 1}
	grace := 31 * time.Second
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx", ReadinessProbe: httpProbe}}},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(started.Add(-5 * time.Second))}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Started: ptr.To(true),
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}},
			},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	failing := &conditions.Failure{Reason: conditions.ReasonReadinessProbeFailed,
		Message: "Pod a: container web has not passed its readiness probe (HTTP GET / on port http) since 2026-11-24T12:00:00Z"}
	for _, tc := range []struct {
		name        string
		now         time.Time
		pods        []*corev1.Pod
		want        *conditions.Failure
		wantRecheck time.Duration
	}{
		{"should find nothing without pods", started, nil, nil, 0},
		{"should wait while the probe may still pass", started.Add(10 * time.Second), []*corev1.Pod{pod("a", nil)}, nil, grace - 10*time.Second},
		{"should report a container past its probe's time", started.Add(grace), []*corev1.Pod{pod("a", nil)}, failing, 0},
		{"should say the same later", started.Add(time.Hour), []*corev1.Pod{pod("a", nil)}, failing, 0},
		{"should count the initial delay", started.Add(grace), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: httpProbe.ProbeHandler, InitialDelaySeconds: 20, PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 1}
		})}, nil, 20 * time.Second},
		{"should find nothing wrong with a ready container", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Ready = true
		})}, nil, 0},
		{"should leave a container without a readiness probe alone", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = nil
		})}, nil, 0},
		{"should leave a container that has not passed its startup probe to it", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Started = ptr.To(false)
		})}, nil, 0},
		{"should leave a container that is not running to the pod failures", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		})}, nil, 0},
		{"should count from when a ready container stopped being ready", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(started.Add(time.Hour - 5*time.Second))
		})}, nil, grace - 5*time.Second},
		{"should report the first pod by name and recheck none", started.Add(time.Hour), []*corev1.Pod{pod("b", nil), pod("a", nil)}, failing, 0},
		{"should recheck at the first container's time", started.Add(20 * time.Second), []*corev1.Pod{
			pod("b", nil),
			pod("a", func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(started.Add(15 * time.Second))
			}),
		}, nil, grace - 20*time.Second},
		{"should describe a TCP probe", started.Add(time.Hour), []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(11211)}}}
		})}, &conditions.Failure{Reason: conditions.ReasonReadinessProbeFailed,
			Message: "Pod a: container web has not passed its readiness probe (TCP connect to port 11211) since 2026-11-24T12:00:00Z"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, recheck := ReadinessFailure(tc.now, tc.pods...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
			if recheck != tc.wantRecheck {
				t.Errorf("recheck = %s, want %s", recheck, tc.wantRecheck)
			}
		})
	}
}

func TestUnreadyContainersChangeOnlyWithReadiness(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	p := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", ReadinessProbe: &corev1.Probe{}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "web",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}},
	}
	if got := UnreadyContainers(p); !cmp.Equal(got, []string{"web@2026-11-24T12:00:00Z"}) {
		t.Errorf("running, not ready: %q", got)
	}
	p.Status.ContainerStatuses[0].RestartCount = 2
	if got := UnreadyContainers(p); !cmp.Equal(got, []string{"web@2026-11-24T12:00:00Z"}) {
		t.Errorf("a restart count alone changed it: %q", got)
	}
	p.Status.ContainerStatuses[0].Ready = true
	if got := UnreadyContainers(p); got != nil {
		t.Errorf("ready: %q", got)
	}
}
