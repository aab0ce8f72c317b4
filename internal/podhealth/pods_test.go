package podhealth

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/app-operator/app-operator/api/conditions"
)

func TestPodFailure(t *testing.T) {
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.7.9"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodPending},
		}
		mutate(p)
		return p
	}
	waiting := func(reason, message string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Image: "docker.io/library/nginx:1.7.9", RestartCount: 7,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}
		}
	}
	crashed := func(running, ready bool, exitCode int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			cs := corev1.ContainerStatus{Name: "web", Ready: ready, RestartCount: 3,
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error"}}}
			if running {
				cs.State.Running = &corev1.ContainerStateRunning{}
			} else {
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		}
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want *conditions.Failure
	}{
		{"should find nothing wrong without pods", nil, nil},
		{"should find nothing wrong with a pod being created", []*corev1.Pod{pod("a", waiting("ContainerCreating", ""))}, nil},
		{"should name the scheduler's reason for an unschedulable pod", []*corev1.Pod{pod("a", unschedulable)},
			&conditions.Failure{Reason: conditions.ReasonPodUnschedulable, Message: "Pod a cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."}},
		{"should name the image that cannot be pulled, as the spec writes it", []*corev1.Pod{pod("a", waiting("ImagePullBackOff", "Back-off pulling image"))},
			&conditions.Failure{Reason: conditions.ReasonImagePullFailed, Message: `Pod a: container web cannot pull image "nginx:1.7.9"`}},
		{"should say the same while the kubelet retries the pull", []*corev1.Pod{pod("a", waiting("ErrImagePull", "rpc error: connection refused"))},
			&conditions.Failure{Reason: conditions.ReasonImagePullFailed, Message: `Pod a: container web cannot pull image "nginx:1.7.9"`}},
		{"should report a container that cannot start", []*corev1.Pod{pod("a", waiting("CreateContainerConfigError", `configmap "page" not found`))},
			&conditions.Failure{Reason: conditions.ReasonContainerCannotStart, Message: `Pod a: container web cannot start: configmap "page" not found`}},
		{"should report a crash loop with the last exit code", []*corev1.Pod{pod("a", crashed(false, false, 1))},
			&conditions.Failure{Reason: conditions.ReasonCrashLoopBackOff, Message: "Pod a: container web keeps exiting: last exit code 1 (Error)"}},
		{"should say the same while the crashing container runs again", []*corev1.Pod{pod("a", crashed(true, false, 1))},
			&conditions.Failure{Reason: conditions.ReasonCrashLoopBackOff, Message: "Pod a: container web keeps exiting: last exit code 1 (Error)"}},
		{"should find nothing wrong once a restarted container is ready", []*corev1.Pod{pod("a", crashed(true, true, 1))}, nil},
		{"should report the first failing pod by name", []*corev1.Pod{pod("b", unschedulable), pod("a", crashed(true, true, 1)), pod("c", waiting("ImagePullBackOff", ""))},
			&conditions.Failure{Reason: conditions.ReasonPodUnschedulable, Message: "Pod b cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."}},
		{"should leave out a pod being deleted", []*corev1.Pod{pod("a", func(p *corev1.Pod) {
			unschedulable(p)
			p.DeletionTimestamp = &metav1.Time{}
		})}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Failure(tc.pods...)); diff != "" {
				t.Errorf("PodFailure (-want +got):\n%s", diff)
			}
		})
	}
}
